@_spi(Wire) import DBusCodec
import Foundation

/// Reads items from a D-Bus message, validating the wire format and the limits.
struct ItemDecoder {
  private var budget: ItemCodecBudget

  init(limits: ItemCodecLimits) { budget = ItemCodecBudget(limits) }

  private var limits: ItemCodecLimits { budget.limits }

  mutating func decode(_ buffer: UnsafeRawBufferPointer) throws(ItemCodecError) -> [ExtensionItem] {
    guard buffer.count <= limits.maximumMessageSize else {
      throw ItemCodecError(
        .messageTooLarge, offset: 0,
        "the input is \(buffer.count) bytes; at most \(limits.maximumMessageSize) are allowed "
          + "(maximumMessageSize)")
    }
    guard buffer.count >= 16 else {
      throw ItemCodecError(
        .truncated, offset: buffer.count,
        "the input ends inside the 16-byte fixed header (\(buffer.count) bytes)")
    }
    let bigEndian: Bool
    switch buffer[0] {
    case UInt8(ascii: "l"): bigEndian = false
    case UInt8(ascii: "B"): bigEndian = true
    default:
      throw ItemCodecError(.invalidHeader, offset: 0, "the first byte is not 'l' or 'B'")
    }
    var reader = ItemReader(buffer, bigEndian: bigEndian, position: 1)
    guard try reader.byte() == 4 else {
      throw reader.failure(.notAnItemMessage, "the message is not a SIGNAL (type 4)", at: 1)
    }
    _ = try reader.byte()  // flags: any
    guard try reader.byte() == 1 else {
      throw reader.failure(.invalidHeader, "the protocol version is not 1", at: 3)
    }
    let bodyLength = Int(try reader.uint32())
    guard try reader.uint32() != 0 else {
      throw reader.failure(.invalidHeader, "the serial is 0", at: 8)
    }
    try readHeaderFields(&reader)
    try reader.align(8)
    let bodyStart = reader.position
    guard bodyLength <= reader.remaining else {
      throw ItemCodecError(
        .truncated, offset: buffer.count,
        "the input ends inside the body (\(bodyLength) bytes announced, "
          + "\(reader.remaining) present)")
    }
    guard bodyLength == reader.remaining else {
      throw ItemCodecError(
        .trailingBytes, offset: bodyStart + bodyLength,
        "\(reader.remaining - bodyLength) bytes follow the end of the message")
    }
    return try readBody(&reader)
  }

  private func readHeaderFields(_ reader: inout ItemReader) throws(ItemCodecError) {
    let end = try reader.beginArray(elementAlignment: 8)
    var sawPath = false
    var sawInterface = false
    var sawMember = false
    var sawSignature = false
    while reader.hasElement(before: end) {
      try reader.align(8)
      let fieldOffset = reader.position
      let code = try reader.byte()
      let (typeOffset, typeLength) = try reader.signature()
      func expect(_ type: StaticString, _ name: String) throws(ItemCodecError) {
        guard reader.bytesEqual(at: typeOffset, length: typeLength, type) else {
          throw reader.failure(
            .malformed, "the \(name) header field does not have type \(type)", at: typeOffset)
        }
      }
      func expectValue(_ value: StaticString, _ name: String) throws(ItemCodecError) {
        let lengthOffset = reader.position
        let length = Int(try reader.uint32())
        let start = reader.position
        guard length < reader.remaining, reader.peek(at: start + length) == 0,
          reader.bytesEqual(at: start, length: length, value)
        else {
          throw reader.failure(
            .notAnItemMessage, "the \(name) header field is not \(value)", at: lengthOffset)
        }
        reader.seek(to: start + length + 1)
      }
      switch code {
      case 1:
        try expect("o", "PATH")
        try expectValue(ItemCodec.objectPathLiteral, "PATH")
        sawPath = true
      case 2:
        try expect("s", "INTERFACE")
        try expectValue(ItemCodec.interfaceLiteral, "INTERFACE")
        sawInterface = true
      case 3:
        try expect("s", "MEMBER")
        try expectValue(ItemCodec.memberLiteral, "MEMBER")
        sawMember = true
      case 8:
        try expect("g", "SIGNATURE")
        let (offset, length) = try reader.signature()
        guard reader.bytesEqual(at: offset, length: length, ItemCodec.bodySignatureLiteral) else {
          throw reader.failure(
            .notAnItemMessage, "the body signature is not \(ItemCodec.bodySignature)",
            at: offset)
        }
        sawSignature = true
      case 9:
        try expect("u", "UNIX_FDS")
        guard try reader.uint32() == 0 else {
          throw reader.failure(.notAnItemMessage, "an item message carries no file descriptors")
        }
      case 0:
        throw reader.failure(.malformed, "header field code 0 is invalid", at: fieldOffset)
      default:
        // Known fields the item format does not use (ERROR_NAME, REPLY_SERIAL,
        // DESTINATION, SENDER) and unknown fields are validated and ignored.
        var type: [UInt8] = []
        for index in typeOffset..<typeOffset + typeLength { type.append(reader.peek(at: index)) }
        guard Signature.isSingleCompleteType(type) else {
          throw reader.failure(
            .malformed, "a header field's type is not a single complete type", at: typeOffset)
        }
        _ = try reader.skipValue(type, at: 0, depth: 2)
      }
    }
    try reader.endArray(end)
    guard sawPath, sawInterface, sawMember, sawSignature else {
      throw reader.failure(
        .notAnItemMessage,
        "the message lacks a PATH, INTERFACE, MEMBER or SIGNATURE header field", at: 12)
    }
  }

  private mutating func readBody(_ reader: inout ItemReader) throws(ItemCodecError)
    -> [ExtensionItem]
  {
    let versionOffset = reader.position
    let version = try reader.uint32()
    guard version == ItemCodec.formatVersion else {
      throw reader.failure(
        .unsupportedVersion,
        "format version \(version) is not supported (this decoder reads "
          + "\(ItemCodec.formatVersion))", at: versionOffset)
    }
    let end = try reader.beginArray(elementAlignment: 8)
    var items: [ExtensionItem] = []
    while reader.hasElement(before: end) {
      try budget.checkItems(items.count + 1, offset: reader.position)
      items.append(try readItem(&reader))
    }
    try reader.endArray(end)
    let extensionsEnd = try reader.beginArray(elementAlignment: 8)
    while reader.hasElement(before: extensionsEnd) {
      try reader.align(8)
      _ = try readString(&reader)
      let type = try reader.variantSignature()
      _ = try reader.skipValue(type, at: 0, depth: 4)
    }
    try reader.endArray(extensionsEnd)
    guard reader.remaining == 0 else {
      throw reader.failure(.malformed, "bytes follow the body's last value")
    }
    return items
  }

  private func readString(_ reader: inout ItemReader) throws(ItemCodecError) -> String {
    try reader.string(maximumLength: limits.maximumStringLength)
  }

  private mutating func readBytes(_ reader: inout ItemReader) throws(ItemCodecError) -> Data {
    let offset = reader.position
    var result = Data()
    var budget = self.budget
    try reader.byteArray { bytes throws(ItemCodecError) in
      try budget.addInlineBytes(bytes.count, offset: offset)
      result = Data(bytes)
    }
    self.budget = budget
    return result
  }

  private mutating func readItem(_ reader: inout ItemReader) throws(ItemCodecError)
    -> ExtensionItem
  {
    try reader.align(8)
    let title = try readText(&reader, "title")
    let contentText = try readText(&reader, "content text")
    var attachments: [ItemProvider] = []
    let end = try reader.beginArray(elementAlignment: 8)
    while reader.hasElement(before: end) {
      try budget.addAttachment(offset: reader.position)
      attachments.append(try readProvider(&reader))
    }
    try reader.endArray(end)
    let userInfoOffset = reader.position
    let userInfo = try readDictionary(&reader, depth: 0)
    for key in userInfo.keys where ExtensionItem.reservedUserInfoKeys.contains(key) {
      throw reader.failure(
        .invalidValue, "user info uses the reserved key \(key)", at: userInfoOffset)
    }
    var item = ExtensionItem(attachments: attachments, userInfo: userInfo)
    item.attributedTitle = title
    item.attributedContentText = contentText
    return item
  }

  private mutating func readText(_ reader: inout ItemReader, _ what: String)
    throws(ItemCodecError) -> AttributedText?
  {
    let end = try reader.beginArray(elementAlignment: 8)
    guard reader.hasElement(before: end) else {
      try reader.endArray(end)
      return nil
    }
    try reader.align(8)
    var text = AttributedText(try readString(&reader))
    let richEnd = try reader.beginArray(elementAlignment: 8)
    if reader.hasElement(before: richEnd) {
      try reader.align(8)
      let type = try readString(&reader)
      text.richText = .init(type: UniformType(type), data: try readBytes(&reader))
      guard !reader.hasElement(before: richEnd) else {
        throw reader.failure(.invalidValue, "the \(what) has more than one rich form")
      }
    }
    try reader.endArray(richEnd)
    guard !reader.hasElement(before: end) else {
      throw reader.failure(.invalidValue, "the item has more than one \(what)")
    }
    try reader.endArray(end)
    return text
  }

  private mutating func readProvider(_ reader: inout ItemReader) throws(ItemCodecError)
    -> ItemProvider
  {
    try reader.align(8)
    var suggestedName: String?
    let nameEnd = try reader.beginArray(elementAlignment: 4)
    if reader.hasElement(before: nameEnd) {
      suggestedName = try readString(&reader)
      guard !reader.hasElement(before: nameEnd) else {
        throw reader.failure(.invalidValue, "an attachment has more than one suggested name")
      }
    }
    try reader.endArray(nameEnd)
    try reader.align(8)
    let width = try reader.double()
    let height = try reader.double()
    var provider = ItemProvider()
    provider.suggestedName = suggestedName
    provider.preferredPresentationSize = PresentationSize(width: width, height: height)
    let end = try reader.beginArray(elementAlignment: 8)
    var count = 0
    while reader.hasElement(before: end) {
      count += 1
      try budget.checkRepresentations(count, offset: reader.position)
      try reader.align(8)
      let typeOffset = reader.position
      let type = UniformType(try readString(&reader))
      let kindOffset = reader.position
      let kind = try reader.byte()
      let visibility = ItemRepresentation.Visibility(rawValue: try reader.uint32())
      let string = try readString(&reader)
      let bytesOffset = reader.position
      let data = try readBytes(&reader)
      let content: ItemRepresentation.Content
      switch ItemRepresentation.Kind(rawValue: kind) {
      case .data?:
        guard string.isEmpty else {
          throw reader.failure(
            .invalidValue, "a data representation carries a string", at: kindOffset)
        }
        content = .data(data)
      case .file?:
        content = .file(path: string)
      case .url?:
        switch ItemRepresentation.payloadURL(string) {
        case .success(let url): content = .url(url)
        case .failure(let problem):
          throw reader.failure(.invalidValue, problem.message, at: kindOffset)
        }
      case .text?:
        content = .text(string)
      case nil:
        throw reader.failure(.invalidValue, "payload kind \(kind) is not 1...4", at: kindOffset)
      }
      if kind != ItemRepresentation.Kind.data.rawValue, !data.isEmpty {
        throw reader.failure(
          .invalidValue, "a file, URL or text representation carries bytes", at: bytesOffset)
      }
      guard
        provider.register(ItemRepresentation(type: type, visibility: visibility, content: content))
      else {
        throw reader.failure(
          .invalidValue, "an attachment registers \(type) twice", at: typeOffset)
      }
    }
    try reader.endArray(end)
    return provider
  }

  private mutating func readDictionary(_ reader: inout ItemReader, depth: Int)
    throws(ItemCodecError) -> [String: PropertyListValue]
  {
    try budget.checkDepth(depth, offset: reader.position)
    let end = try reader.beginArray(elementAlignment: 8)
    var result: [String: PropertyListValue] = [:]
    while reader.hasElement(before: end) {
      try reader.align(8)
      let keyOffset = reader.position
      let key = try readString(&reader)
      let value = try readVariant(&reader, depth: depth)
      guard result.updateValue(value, forKey: key) == nil else {
        throw reader.failure(.invalidValue, "the key \(key) appears twice", at: keyOffset)
      }
    }
    try reader.endArray(end)
    return result
  }

  private mutating func readVariant(_ reader: inout ItemReader, depth: Int)
    throws(ItemCodecError) -> PropertyListValue
  {
    let (offset, length) = try reader.signature()
    func signature(_ expected: StaticString) -> Bool {
      reader.bytesEqual(at: offset, length: length, expected)
    }
    if length == 1 {
      switch reader.peek(at: offset) {
      case UInt8(ascii: "s"): return .string(try readString(&reader))
      case UInt8(ascii: "x"): return .integer(Int64(bitPattern: try reader.uint64()))
      case UInt8(ascii: "d"): return .double(try reader.double())
      case UInt8(ascii: "b"): return .bool(try reader.bool())
      default: break
      }
    } else if signature("ay") {
      return .data(try readBytes(&reader))
    } else if signature("(d)") {
      try reader.align(8)
      return .date(Date(timeIntervalSinceReferenceDate: try reader.double()))
    } else if signature("av") {
      try budget.checkDepth(depth + 1, offset: reader.position)
      let end = try reader.beginArray(elementAlignment: 1)
      var elements: [PropertyListValue] = []
      while reader.hasElement(before: end) {
        elements.append(try readVariant(&reader, depth: depth + 1))
      }
      try reader.endArray(end)
      return .array(elements)
    } else if signature("a{sv}") {
      return .dictionary(try readDictionary(&reader, depth: depth + 1))
    }
    throw reader.failure(
      .invalidValue,
      "a user-info value's type is not one of s x d b ay (d) av a{sv}", at: offset)
  }
}
