@_spi(Wire) import DBusCodec
import Foundation

/// Writes items into a D-Bus message, checking the limits as it goes.
struct ItemEncoder {
  private var writer: WireWriter
  private var budget: ItemCodecBudget

  init(limits: ItemCodecLimits, capacity: Int) {
    writer = WireWriter(capacity: capacity)
    budget = ItemCodecBudget(limits)
  }

  mutating func encode(_ items: [ExtensionItem]) throws(ItemCodecError) -> [UInt8] {
    try budget.checkItems(items.count, offset: nil)
    writeHeader()
    let bodyStart = writer.count
    writer.uint32(ItemCodec.formatVersion)
    let itemsMark = writer.beginArray(elementAlignment: 8)
    for item in items { try writeItem(item) }
    writer.endArray(itemsMark)
    let extensionsMark = writer.beginArray(elementAlignment: 8)
    writer.endArray(extensionsMark)
    let bodyLength = writer.count - bodyStart
    writer.patch(UInt32(truncatingIfNeeded: bodyLength), at: 4)
    guard writer.count <= budget.limits.maximumMessageSize else {
      throw ItemCodecError(
        .messageTooLarge,
        "the message would be \(writer.count) bytes; at most "
          + "\(budget.limits.maximumMessageSize) are allowed (maximumMessageSize)")
    }
    return writer.bytes
  }

  /// The fixed header and the header fields; the body length is patched at the end.
  private mutating func writeHeader() {
    writer.byte(UInt8(ascii: "l"))
    writer.byte(4)  // SIGNAL
    writer.byte(0x01)  // NO_REPLY_EXPECTED
    writer.byte(1)  // protocol version
    writer.uint32(0)  // body length, patched later
    writer.uint32(1)  // serial
    let fields = writer.beginArray(elementAlignment: 8)
    headerField(1, "o", ItemCodec.objectPathLiteral)
    headerField(2, "s", ItemCodec.interfaceLiteral)
    headerField(3, "s", ItemCodec.memberLiteral)
    writer.pad(to: 8)
    writer.byte(8)
    writer.signature("g")
    writer.signature(ItemCodec.bodySignatureLiteral)
    writer.endArray(fields)
    writer.pad(to: 8)
  }

  private mutating func headerField(_ code: UInt8, _ type: StaticString, _ value: StaticString) {
    writer.pad(to: 8)
    writer.byte(code)
    writer.signature(type)
    writer.uint32(UInt32(value.utf8CodeUnitCount))
    value.withUTF8Buffer { writer.raw($0) }
    writer.byte(0)
  }

  private mutating func string(_ value: String, _ what: @autoclosure () -> String)
    throws(ItemCodecError)
  {
    try budget.checkString(value.utf8.count, offset: nil)
    guard writer.string(value) else {
      throw ItemCodecError(
        .invalidString, "\(what()) contains a NUL character, which D-Bus strings cannot carry")
    }
  }

  private mutating func bytes(_ data: Data) throws(ItemCodecError) {
    try budget.addInlineBytes(data.count, offset: nil)
    data.withUnsafeBytes { writer.byteArray($0) }
  }

  private mutating func writeItem(_ item: ExtensionItem) throws(ItemCodecError) {
    writer.pad(to: 8)
    try writeText(item.attributedTitle, "the title")
    try writeText(item.attributedContentText, "the content text")
    let attachments = writer.beginArray(elementAlignment: 8)
    for provider in item.attachments { try writeProvider(provider) }
    writer.endArray(attachments)
    for key in item.customUserInfo.keys where ExtensionItem.reservedUserInfoKeys.contains(key) {
      throw ItemCodecError(.invalidValue, "user info uses the reserved key \(key)")
    }
    try writeDictionary(item.customUserInfo, depth: 0)
  }

  private mutating func writeText(_ text: AttributedText?, _ what: String) throws(ItemCodecError) {
    let mark = writer.beginArray(elementAlignment: 8)
    if let text {
      writer.pad(to: 8)
      try string(text.string, what)
      let rich = writer.beginArray(elementAlignment: 8)
      if let richText = text.richText {
        writer.pad(to: 8)
        try string(richText.type.identifier, "the rich type of \(what)")
        try bytes(richText.data)
      }
      writer.endArray(rich)
    }
    writer.endArray(mark)
  }

  private mutating func writeProvider(_ provider: ItemProvider) throws(ItemCodecError) {
    if let lazy = provider.lazyRepresentations.first { throw ItemCodecError.notLoaded(lazy) }
    try budget.addAttachment(offset: nil)
    try budget.checkRepresentations(provider.representations.count, offset: nil)
    writer.pad(to: 8)
    let name = writer.beginArray(elementAlignment: 4)
    if let suggestedName = provider.suggestedName { try string(suggestedName, "a suggested name") }
    writer.endArray(name)
    writer.pad(to: 8)
    writer.double(provider.preferredPresentationSize.width)
    writer.double(provider.preferredPresentationSize.height)
    let representations = writer.beginArray(elementAlignment: 8)
    for representation in provider.representations {
      writer.pad(to: 8)
      try string(representation.type.identifier, "a representation type")
      writer.byte(representation.content.kind.rawValue)
      writer.uint32(representation.visibility.rawValue)
      switch representation.content {
      case .data(let data):
        try string("", "")
        try bytes(data)
      case .file(let path):
        try string(path, "a file path")
        writer.uint32(0)
      case .url(let url):
        let text = url.absoluteString
        if let problem = ItemRepresentation.urlPayloadProblem(text) {
          throw ItemCodecError(.invalidValue, "a URL representation: \(problem.message)")
        }
        try string(text, "a URL")
        writer.uint32(0)
      case .text(let text):
        try string(text, "a text payload")
        writer.uint32(0)
      }
    }
    writer.endArray(representations)
  }

  private mutating func writeDictionary(_ dictionary: [String: PropertyListValue], depth: Int)
    throws(ItemCodecError)
  {
    try budget.checkDepth(depth, offset: nil)
    let mark = writer.beginArray(elementAlignment: 8)
    for (key, value) in dictionary {
      writer.pad(to: 8)
      try string(key, "a user-info key")
      try writeVariant(value, depth: depth)
    }
    writer.endArray(mark)
  }

  private mutating func writeVariant(_ value: PropertyListValue, depth: Int)
    throws(ItemCodecError)
  {
    switch value {
    case .string(let string):
      writer.signature("s")
      try self.string(string, "a user-info string")
    case .integer(let integer):
      writer.signature("x")
      writer.int64(integer)
    case .double(let double):
      writer.signature("d")
      writer.double(double)
    case .bool(let bool):
      writer.signature("b")
      writer.bool(bool)
    case .date(let date):
      writer.signature("(d)")
      writer.pad(to: 8)
      writer.double(date.timeIntervalSinceReferenceDate)
    case .data(let data):
      writer.signature("ay")
      try bytes(data)
    case .array(let elements):
      try budget.checkDepth(depth + 1, offset: nil)
      writer.signature("av")
      let mark = writer.beginArray(elementAlignment: 1)
      for element in elements { try writeVariant(element, depth: depth + 1) }
      writer.endArray(mark)
    case .dictionary(let entries):
      writer.signature("a{sv}")
      try writeDictionary(entries, depth: depth + 1)
    }
  }
}
