@_spi(Wire) public import DBusCodec

extension Message {
  /// The longest message the specification allows, 128 MiB.
  public static let maximumWireLength = 134_217_728

  /// The message in the D-Bus wire format, little-endian, as `dbus_message_marshal` writes it
  /// and `g_dbus_message_new_from_blob` reads it.
  ///
  /// A message that has not been sent has no serial; it is marshalled with serial 1,
  /// since the wire format does not allow zero.
  ///
  /// - Throws: ``DBusError`` when the message is malformed (``validate()``) or longer than
  ///   ``maximumWireLength``.
  public func marshalled() throws(DBusError) -> [UInt8] {
    try validate()
    return try marshalled(validatedWithSerial: serial == 0 ? 1 : serial)
  }

  /// The wire form of a message that ``validate()`` has accepted, with `serial` (not zero)
  /// in its header; what ``marshalled()`` returns after validating.
  ///
  /// It is written in one pass into one buffer: header fields and the body's signature go
  /// straight in, with no intermediate values or strings.
  ///
  /// - Throws: ``DBusError`` with name ``DBusError/Name/limitsExceeded`` when the message
  ///   is longer than ``maximumWireLength``.
  package func marshalled(validatedWithSerial serial: UInt32) throws(DBusError) -> [UInt8] {
    var writer = WireWriter(capacity: estimatedWireLength)
    let flags = (noReplyExpected ? 0x1 : 0) | (noAutoStart ? 0x2 : 0)
    writer.byte(UInt8(ascii: "l"))
    writer.byte(kind.wireCode)
    writer.byte(UInt8(flags))
    writer.byte(1)
    writer.uint32(0)  // body length, patched below
    writer.uint32(serial)
    let fields = writer.beginArray(elementAlignment: 8)
    // Each field is a struct (y code, v value): aligned to 8, the code, the variant's
    // one-type signature, then the value.
    func field(_ code: HeaderField, _ type: StaticString, _ text: String) {
      writer.pad(to: 8)
      writer.byte(code.rawValue)
      writer.signature(type)
      writer.string(text)
    }
    // In the order libdbus's constructors write them (`dbus_message_new_method_call`,
    // `_new_signal`, `_new_error`: path, destination, interface, member, error name), then
    // what setters append, so a message libdbus builds itself has the same bytes.
    if let path { field(.path, "o", path.rawValue) }
    if let destination { field(.destination, "s", destination.rawValue) }
    if let interface { field(.interface, "s", interface.rawValue) }
    if let member { field(.member, "s", member.rawValue) }
    if let errorName { field(.errorName, "s", errorName.rawValue) }
    if let sender { field(.sender, "s", sender.rawValue) }
    if replySerial != 0 {
      writer.pad(to: 8)
      writer.byte(HeaderField.replySerial.rawValue)
      writer.signature("u")
      writer.uint32(replySerial)
    }
    if !body.isEmpty {
      writer.pad(to: 8)
      writer.byte(HeaderField.signature.rawValue)
      writer.signature("g")
      writer.signature(ofBody: body)
    }
    writer.endArray(fields)
    writer.pad(to: 8)
    let bodyStart = writer.bytes.count
    for value in body { writer.value(value) }
    guard writer.bytes.count <= Self.maximumWireLength else {
      throw DBusError(
        .limitsExceeded,
        "a message of \(writer.bytes.count) bytes is longer than the limit of 128 MiB")
    }
    writer.patch(UInt32(writer.bytes.count - bodyStart), at: 4)
    return writer.bytes
  }

  /// About how many bytes the marshalled message takes, so that its buffer is allocated
  /// once for the usual message: the header's strings, and 8 bytes or a string's length
  /// per argument (containers grow the buffer as needed).
  private var estimatedWireLength: Int {
    func length(_ name: String?) -> Int { name.map { $0.utf8.count + 16 } ?? 0 }
    var total = 64 + length(path?.rawValue) + length(interface?.rawValue)
    total += length(member?.rawValue) + length(destination?.rawValue)
    for value in body {
      if case .string(let text) = value { total += text.utf8.count + 8 } else { total += 16 }
    }
    return total
  }

  /// How long the message that starts with `prefix` is, header and body, once its first 16
  /// bytes have arrived; `nil` while fewer have.
  ///
  /// - Throws: ``DBusError`` with name ``DBusError/Name/inconsistentMessage`` when the
  ///   fixed header is not a D-Bus header, ``DBusError/Name/limitsExceeded`` when it
  ///   announces more than ``maximumWireLength``.
  public static func wireLength(ofPrefix prefix: ArraySlice<UInt8>) throws(DBusError) -> Int? {
    guard prefix.count >= 16 else { return nil }
    let start = prefix.startIndex
    let bigEndian: Bool
    switch prefix[start] {
    case UInt8(ascii: "l"): bigEndian = false
    case UInt8(ascii: "B"): bigEndian = true
    default:
      throw DBusError(
        .inconsistentMessage,
        "malformed message: the first byte is \(prefix[start]), not 'l' or 'B'")
    }
    guard prefix[start + 3] == 1 else {
      throw DBusError(
        .inconsistentMessage,
        "malformed message: protocol version \(prefix[start + 3]) is not 1")
    }
    func uint32(at offset: Int) -> Int {
      let bytes = (0..<4).map { Int(prefix[start + offset + $0]) }
      return bigEndian
        ? bytes[0] << 24 | bytes[1] << 16 | bytes[2] << 8 | bytes[3]
        : bytes[3] << 24 | bytes[2] << 16 | bytes[1] << 8 | bytes[0]
    }
    let bodyLength = uint32(at: 4)
    let fieldsLength = uint32(at: 12)
    let total = 16 + ((fieldsLength + 7) & ~7) + bodyLength
    guard total <= maximumWireLength else {
      throw DBusError(
        .limitsExceeded,
        "malformed message: it announces \(total) bytes; the limit is 128 MiB")
    }
    return total
  }

  /// Reads one message in the D-Bus wire format, in either byte order, checking all of it.
  ///
  /// - Parameter bytes: Exactly one marshalled message; untrusted input is fine.
  /// - Throws: ``DBusError`` with name ``DBusError/Name/inconsistentMessage`` saying what
  ///   is wrong and at which byte.
  public init(marshalled bytes: [UInt8]) throws(DBusError) {
    guard let length = try Self.wireLength(ofPrefix: bytes[...]) else {
      throw DBusError(
        .inconsistentMessage,
        "malformed message: a message is at least 16 bytes long; got \(bytes.count)")
    }
    guard length == bytes.count else {
      throw DBusError(
        .inconsistentMessage,
        "malformed message: the header announces \(length) bytes but \(bytes.count) were given")
    }
    self = try bytes.withUnsafeBytes { buffer in
      Result { () throws(WireError) in try Message(buffer) }
    }.mapError(DBusError.init).get()
  }

  /// Reads the message that fills `buffer`, whose length ``wireLength(ofPrefix:)`` has checked.
  private init(_ buffer: UnsafeRawBufferPointer) throws(WireError) {
    var reader = WireReader(
      buffer, bigEndian: buffer[0] == UInt8(ascii: "B"), position: 1)
    guard let kind = Kind(wireCode: try reader.byte()) else {
      throw reader.malformed("message type \(buffer[1]) is not one of 1 to 4")
    }
    let flags = try reader.byte()
    reader.position = 8  // past the body length, which wireLength has checked
    let serial = try reader.uint32()
    guard serial != 0 else { throw reader.malformed("the serial is zero") }
    self.init(
      kind: kind, serial: serial, noReplyExpected: flags & 0x1 != 0, noAutoStart: flags & 0x2 != 0)
    let fields = try reader.value(Array("a(yv)".utf8), 0..<5)
    var signature = Signature(unchecked: "")
    for field in fields.structures {
      guard case .byte(let code) = field[0], case .variant(let value) = field[1] else { continue }
      try apply(field: code, value, signature: &signature, reader)
    }
    // The header ends where wireLength says the body starts: the fields array was read to
    // its announced end, and only the padding to 8 is left.
    try reader.align(8)
    let types = Array(signature.rawValue.utf8)
    var index = 0
    while index < types.count {
      let end = WireType.completeTypeEnd(in: types, from: index)
      body.append(try reader.value(types, index..<end))
      index = end
    }
    guard reader.remaining == 0 else {
      throw reader.malformed("the body is longer than its signature '\(signature)' says")
    }
    try checkRequiredFields(reader)
  }

  private mutating func apply(
    field code: UInt8, _ value: DBusValue, signature: inout Signature,
    _ reader: WireReader
  ) throws(WireError) {
    guard code != 0 else { throw reader.malformed("header field code 0 is invalid") }
    guard let field = HeaderField(rawValue: code) else { return }  // unknown fields are ignored
    func name<Name: ValidatedName>(_: Name.Type) throws(WireError) -> Name {
      guard case .string(let text) = value, let name = Name(rawValue: text) else {
        throw reader.malformed("header field \(field) is not a valid \(Name.kind): \(value)")
      }
      return name
    }
    switch field {
    case .path:
      guard case .objectPath(let path) = value else {
        throw reader.malformed("header field path is not an object path")
      }
      self.path = path
    case .interface: interface = try name(InterfaceName.self)
    case .member: member = try name(MemberName.self)
    case .errorName: errorName = DBusError.Name(rawValue: try name(InterfaceName.self).rawValue)
    case .replySerial:
      guard case .uint32(let number) = value, number != 0 else {
        throw reader.malformed("header field reply serial is not a non-zero UINT32")
      }
      replySerial = number
    case .destination: destination = try name(BusName.self)
    case .sender: sender = try name(BusName.self)
    case .signature:
      guard case .signature(let types) = value else {
        throw reader.malformed("header field signature is not a SIGNATURE")
      }
      signature = types
    case .unixFileDescriptors:
      guard case .uint32(let count) = value else {
        throw reader.malformed("header field unix fds is not a UINT32")
      }
      guard count == 0 else { throw reader.malformed("file descriptors are not supported") }
    }
  }

  private func checkRequiredFields(_ reader: WireReader) throws(WireError) {
    let missing: String? =
      switch kind {
      case .methodCall: path == nil ? "path" : member == nil ? "member" : nil
      case .signal:
        path == nil ? "path" : interface == nil ? "interface" : member == nil ? "member" : nil
      case .error: errorName == nil ? "error name" : replySerial == 0 ? "reply serial" : nil
      case .methodReturn: replySerial == 0 ? "reply serial" : nil
      }
    if let missing { throw reader.malformed("a \(kind) message has no \(missing) header field") }
  }
}

/// The header fields of the specification, by code.
private enum HeaderField: UInt8, CustomStringConvertible {
  case path = 1
  case interface, member, errorName, replySerial, destination, sender, signature
  case unixFileDescriptors

  var description: String {
    switch self {
    case .path: "path"
    case .interface: "interface"
    case .member: "member"
    case .errorName: "error name"
    case .replySerial: "reply serial"
    case .destination: "destination"
    case .sender: "sender"
    case .signature: "signature"
    case .unixFileDescriptors: "unix fds"
    }
  }
}

extension WireReader {
  /// The error for a broken rule of the message format at the current position.
  fileprivate func malformed(_ problem: String) -> WireError { failure(.malformed, problem) }
}

extension Message.Kind {
  /// The message type byte.
  var wireCode: UInt8 {
    switch self {
    case .methodCall: 1
    case .methodReturn: 2
    case .error: 3
    case .signal: 4
    }
  }

  init?(wireCode: UInt8) {
    switch wireCode {
    case 1: self = .methodCall
    case 2: self = .methodReturn
    case 3: self = .error
    case 4: self = .signal
    default: return nil
    }
  }
}

extension DBusValue {
  /// The fields of each struct in an array of structs.
  fileprivate var structures: [[DBusValue]] {
    guard case .array(_, let elements) = self else { return [] }
    return elements.compactMap {
      if case .structure(let fields) = $0 { return fields }
      return nil
    }
  }
}
