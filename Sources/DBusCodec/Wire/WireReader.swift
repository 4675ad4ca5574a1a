/// Reads D-Bus wire-format values from one message in either byte order, checking every
/// marshalling rule and never reading outside the message.
///
/// Offsets count from the start of the message, the start of `bytes`.
struct WireReader {
  let bytes: [UInt8]
  let bigEndian: Bool
  var position: Int
  /// Containers (arrays, structs, dict entries, variants) open around the current value.
  private var depth = 0

  /// How deeply containers may nest in a message, all kinds counted together.
  static let maximumDepth = 64
  /// The longest array the specification allows, 64 MiB.
  static let maximumArrayLength = 67_108_864

  init(_ bytes: [UInt8], bigEndian: Bool, position: Int = 0) {
    self.bytes = bytes
    self.bigEndian = bigEndian
    self.position = position
  }

  func malformed(_ problem: String) -> DBusError {
    DBusError(.inconsistentMessage, "malformed message at byte \(position): \(problem)")
  }

  /// Skips the padding to `alignment`, which must be zero bytes.
  mutating func align(_ alignment: Int) throws(DBusError) {
    let target = (position + alignment - 1) & ~(alignment - 1)
    guard target <= bytes.count else { throw malformed("the message ends inside padding") }
    while position < target {
      guard bytes[position] == 0 else { throw malformed("padding must be zero bytes") }
      position += 1
    }
  }

  mutating func byte() throws(DBusError) -> UInt8 {
    guard position < bytes.count else { throw malformed("the message ends inside a byte") }
    defer { position += 1 }
    return bytes[position]
  }

  /// An integer of any width, aligned to its own size.
  mutating func integer<Value: FixedWidthInteger>(_: Value.Type) throws(DBusError) -> Value {
    let size = MemoryLayout<Value>.size
    try align(size)
    guard bytes.count - position >= size else {
      throw malformed("the message ends inside a \(size * 8)-bit integer")
    }
    var value = Value.zero
    for index in 0..<size {
      let byte = Value(truncatingIfNeeded: bytes[position + (bigEndian ? index : size - 1 - index)])
      value = size == 1 ? byte : (value << 8) | byte
    }
    position += size
    return value
  }

  /// A `STRING` or `OBJECT_PATH` body: valid UTF-8 with no NUL, then a NUL.
  mutating func string() throws(DBusError) -> String {
    let length = Int(try integer(UInt32.self))
    guard length < bytes.count - position else {
      throw malformed("a string of \(length) bytes runs past the end of the message")
    }
    return try text(length: length)
  }

  /// A `SIGNATURE`, checked against the specification.
  mutating func signature() throws(DBusError) -> Signature {
    let length = Int(try byte())
    guard length < bytes.count - position else {
      throw malformed("a signature of \(length) bytes runs past the end of the message")
    }
    let text = try text(length: length)
    guard let signature = Signature(rawValue: text) else {
      throw malformed("invalid signature '\(text)': \(Signature.violation(in: text) ?? "")")
    }
    return signature
  }

  private mutating func text(length: Int) throws(DBusError) -> String {
    let content = bytes[position..<position + length]
    guard bytes[position + length] == 0 else { throw malformed("a string is not NUL-terminated") }
    guard !content.contains(0) else { throw malformed("a string contains a NUL byte") }
    guard let text = String(validating: content, as: UTF8.self) else {
      throw malformed("a string is not valid UTF-8")
    }
    position += length + 1
    return text
  }

  /// One value of the single complete type at `range` of `signature`.
  mutating func value(_ signature: [UInt8], _ range: Range<Int>) throws(DBusError) -> DBusValue {
    switch signature[range.lowerBound] {
    case UInt8(ascii: "y"): return .byte(try byte())
    case UInt8(ascii: "b"):
      let raw = try integer(UInt32.self)
      guard raw <= 1 else { throw malformed("a boolean is \(raw), not 0 or 1") }
      return .boolean(raw == 1)
    case UInt8(ascii: "n"): return .int16(try integer(Int16.self))
    case UInt8(ascii: "q"): return .uint16(try integer(UInt16.self))
    case UInt8(ascii: "i"): return .int32(try integer(Int32.self))
    case UInt8(ascii: "u"): return .uint32(try integer(UInt32.self))
    case UInt8(ascii: "x"): return .int64(try integer(Int64.self))
    case UInt8(ascii: "t"): return .uint64(try integer(UInt64.self))
    case UInt8(ascii: "d"): return .double(Double(bitPattern: try integer(UInt64.self)))
    case UInt8(ascii: "s"): return .string(try string())
    case UInt8(ascii: "o"):
      let text = try string()
      guard let path = ObjectPath(rawValue: text) else {
        throw malformed("invalid object path '\(text)': \(ObjectPath.violation(in: text) ?? "")")
      }
      return .objectPath(path)
    case UInt8(ascii: "g"): return .signature(try self.signature())
    case UInt8(ascii: "v"):
      let inner = try self.signature()
      guard inner.isSingleCompleteType else {
        throw malformed("a variant's signature '\(inner)' is not one complete type")
      }
      let innerBytes = Array(inner.rawValue.utf8)
      return .variant(
        try nested { (reader) throws(DBusError) in
          try reader.value(innerBytes, 0..<innerBytes.count)
        })
    case UInt8(ascii: "a"):
      return try nested { (reader) throws(DBusError) in
        try reader.array(signature, range.lowerBound + 1..<range.upperBound)
      }
    case UInt8(ascii: "("):
      return try nested { (reader) throws(DBusError) in
        try reader.align(8)
        var fields: [DBusValue] = []
        var index = range.lowerBound + 1
        while index < range.upperBound - 1 {
          let end = WireType.completeTypeEnd(in: signature, from: index)
          fields.append(try reader.value(signature, index..<end))
          index = end
        }
        return .structure(fields)
      }
    default:
      let code = Character(UnicodeScalar(signature[range.lowerBound]))
      throw malformed("values of type '\(code)' are not supported")
    }
  }

  /// An array whose element type is at `element` of `signature`.
  private mutating func array(_ signature: [UInt8], _ element: Range<Int>) throws(DBusError)
    -> DBusValue
  {
    let length = Int(try integer(UInt32.self))
    guard length <= Self.maximumArrayLength else {
      throw malformed("an array of \(length) bytes is longer than the limit of 64 MiB")
    }
    try align(WireType.alignment(of: signature[element.lowerBound]))
    let end = position + length
    guard end <= bytes.count else {
      throw malformed("an array of \(length) bytes runs past the end of the message")
    }
    let elementType = String(decoding: signature[element], as: UTF8.self)
    if elementType == "y" {
      defer { position = end }
      return .bytes(Array(bytes[position..<end]))
    }
    if signature[element.lowerBound] == UInt8(ascii: "{") {
      let keyEnd = element.lowerBound + 2
      var entries: [DBusValue.DictionaryEntry] = []
      while position < end {
        try align(8)
        let key = try value(signature, element.lowerBound + 1..<keyEnd)
        let valueEnd = WireType.completeTypeEnd(in: signature, from: keyEnd)
        entries.append(.init(key, try value(signature, keyEnd..<valueEnd)))
      }
      guard position == end else { throw malformed("an array's last element runs past its end") }
      let keyType = String(decoding: signature[element.lowerBound + 1..<keyEnd], as: UTF8.self)
      let valueType = String(decoding: signature[keyEnd..<element.upperBound - 1], as: UTF8.self)
      return .dictionary(
        keyType: Signature(unchecked: keyType), valueType: Signature(unchecked: valueType),
        entries)
    }
    var elements: [DBusValue] = []
    while position < end {
      elements.append(try value(signature, element))
    }
    guard position == end else { throw malformed("an array's last element runs past its end") }
    return .array(elementType: Signature(unchecked: elementType), elements)
  }

  /// Runs `body` one container deeper, refusing to pass ``maximumDepth``.
  private mutating func nested(_ body: (inout WireReader) throws(DBusError) -> DBusValue)
    throws(DBusError) -> DBusValue
  {
    guard depth < Self.maximumDepth else {
      throw malformed("containers nest deeper than \(Self.maximumDepth)")
    }
    depth += 1
    defer { depth -= 1 }
    return try body(&self)
  }
}
