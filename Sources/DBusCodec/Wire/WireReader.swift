/// Why a ``WireReader`` refused a message: what kind of rule was broken, where, and a
/// sentence saying which.
///
/// Each user of the reader maps it onto its own error type (``DBusError`` for messages; the
/// item codec's codes).
@_spi(Wire) public struct WireError: Error, Sendable {
  /// What kind of rule a message broke.
  public enum Problem: Sendable {
    /// The input ends inside a value.
    case truncated
    /// A marshalling rule is broken: padding, lengths, signatures, booleans, nesting.
    case malformed
    /// A string is not valid UTF-8 or contains NUL.
    case invalidString
    /// A string is longer than the reader's caller allows.
    case stringTooLong
  }

  /// The kind of rule broken.
  public var problem: Problem
  /// The byte of the message where the problem is.
  public var offset: Int
  /// What is wrong, for people: `a boolean is 2, not 0 or 1`.
  public var message: String

  @inlinable
  public init(_ problem: Problem, offset: Int, _ message: String) {
    self.problem = problem
    self.offset = offset
    self.message = message
  }
}

extension DBusError {
  /// `org.freedesktop.DBus.Error.InconsistentMessage`, "malformed message at byte N: ...".
  package init(_ wire: WireError) {
    self.init(.inconsistentMessage, "malformed message at byte \(wire.offset): \(wire.message)")
  }
}

/// Reads D-Bus wire-format values from one message in either byte order, checking every
/// marshalling rule it relies on and never reading outside the buffer.
///
/// Offsets count from the start of the message, the start of the buffer. The reader borrows
/// its buffer: use it only inside the `withUnsafeBytes` scope that made it. Its primitives are
/// inlinable and not generic, so a caller in another module (the item codec) reads as fast as
/// one inside.
@_spi(Wire) public struct WireReader {
  @usableFromInline let buffer: UnsafeRawBufferPointer
  /// The offset of the next byte to read.
  public var position: Int
  /// Whether integers are big-endian (`B`) rather than little-endian (`l`).
  public let bigEndian: Bool

  /// The longest array the specification allows, 64 MiB.
  @inlinable public static var maximumArrayLength: Int { 67_108_864 }
  /// How deeply containers may nest in a value, all kinds counted together.
  @inlinable public static var maximumDepth: Int { 64 }

  @inlinable
  public init(_ buffer: UnsafeRawBufferPointer, bigEndian: Bool, position: Int = 0) {
    self.buffer = buffer
    self.bigEndian = bigEndian
    self.position = position
  }

  /// The length of the message.
  @inlinable public var count: Int { buffer.count }
  /// The bytes after ``position``.
  @inlinable public var remaining: Int { buffer.count - position }

  /// The error for `problem` at `offset`, ``position`` by default.
  @inlinable
  public func failure(_ problem: WireError.Problem, _ message: String, at offset: Int? = nil)
    -> WireError
  {
    WireError(problem, offset: offset ?? position, message)
  }

  @inlinable
  func truncated(_ what: String) -> WireError {
    WireError(.truncated, offset: position, "the message ends inside \(what)")
  }

  /// Skips the padding to `alignment`, which must be zero bytes.
  @inlinable @inline(__always)
  public mutating func align(_ alignment: Int) throws(WireError) {
    let target = (position + alignment - 1) & ~(alignment - 1)
    guard target <= buffer.count else { throw truncated("padding") }
    while position < target {
      guard buffer[position] == 0 else { throw failure(.malformed, "padding must be zero bytes") }
      position += 1
    }
  }

  @inlinable @inline(__always)
  public mutating func byte() throws(WireError) -> UInt8 {
    guard position < buffer.count else { throw truncated("a byte") }
    defer { position += 1 }
    return buffer[position]
  }

  /// An integer of any width, aligned to its own size.
  @inlinable @inline(__always)
  public mutating func integer<Value: FixedWidthInteger & BitwiseCopyable>(_: Value.Type)
    throws(WireError) -> Value
  {
    let size = MemoryLayout<Value>.size
    try align(size)
    guard remaining >= size else { throw truncated("a \(size * 8)-bit integer") }
    let raw = buffer.loadUnaligned(fromByteOffset: position, as: Value.self)
    position += size
    return bigEndian ? Value(bigEndian: raw) : Value(littleEndian: raw)
  }

  @inlinable @inline(__always)
  public mutating func uint32() throws(WireError) -> UInt32 { try integer(UInt32.self) }

  @inlinable @inline(__always)
  public mutating func uint64() throws(WireError) -> UInt64 { try integer(UInt64.self) }

  @inlinable @inline(__always)
  public mutating func double() throws(WireError) -> Double {
    Double(bitPattern: try integer(UInt64.self))
  }

  /// A `BOOLEAN`, which must be 0 or 1.
  @inlinable @inline(__always)
  public mutating func bool() throws(WireError) -> Bool {
    let start = position
    let raw = try uint32()
    guard raw <= 1 else { throw failure(.malformed, "a boolean is \(raw), not 0 or 1", at: start) }
    return raw == 1
  }

  /// A `STRING` or `OBJECT_PATH` body: length, valid UTF-8 with no NUL, then a NUL.
  @inlinable @inline(__always)
  public mutating func string(maximumLength: Int = .max) throws(WireError) -> String {
    let length = Int(try uint32())
    let start = position
    guard length <= maximumLength else {
      throw failure(
        .stringTooLong,
        "a string of \(length) bytes is longer than the limit of \(maximumLength)")
    }
    guard length < remaining else {
      throw failure(.truncated, "a string of \(length) bytes runs past the end of the message")
    }
    return try text(at: start, length: length)
  }

  /// Reads a `SIGNATURE` and returns the offset and length of its characters, unchecked.
  @inlinable @inline(__always)
  public mutating func signature() throws(WireError) -> (offset: Int, length: Int) {
    let length = Int(try byte())
    let start = position
    guard length < remaining else {
      throw failure(
        .truncated, "a signature of \(length) bytes runs past the end of the message")
    }
    guard buffer[start + length] == 0 else {
      throw failure(.malformed, "a signature is not NUL-terminated", at: start + length)
    }
    position = start + length + 1
    return (start, length)
  }

  /// Reads a `SIGNATURE`, checked against the specification.
  public mutating func validatedSignature() throws(WireError) -> Signature {
    let (offset, length) = try signature()
    let text = String(decoding: buffer[offset..<offset + length], as: UTF8.self)
    guard let signature = Signature(rawValue: text) else {
      throw failure(
        .malformed, "invalid signature '\(text)': \(Signature.violation(in: text) ?? "")",
        at: offset)
    }
    return signature
  }

  /// Whether the bytes at `offset` equal `expected`.
  @inlinable @inline(__always)
  public func bytesEqual(at offset: Int, length: Int, _ expected: StaticString) -> Bool {
    guard length == expected.utf8CodeUnitCount else { return false }
    return expected.withUTF8Buffer { expectedBytes in
      var index = 0
      while index < length {
        guard buffer[offset + index] == expectedBytes[index] else { return false }
        index += 1
      }
      return true
    }
  }

  /// The byte at `offset`, which the caller has bounds-checked.
  @inlinable @inline(__always)
  public func peek(at offset: Int) -> UInt8 { buffer[offset] }

  /// The `length` bytes at `start`, then a NUL: valid UTF-8 with no NUL inside.
  @inlinable @inline(__always)
  mutating func text(at start: Int, length: Int) throws(WireError) -> String {
    guard buffer[start + length] == 0 else {
      throw failure(.malformed, "a string is not NUL-terminated", at: start + length)
    }
    // The string ends at the first NUL, which is the terminator only when none comes before.
    let base = (buffer.baseAddress! + start).assumingMemoryBound(to: CChar.self)
    guard let string = String(validatingCString: base) else {
      throw failure(.invalidString, "a string is not valid UTF-8", at: start)
    }
    guard string.utf8.count == length else {
      throw failure(.invalidString, "a string contains a NUL byte", at: start)
    }
    position = start + length + 1
    return string
  }

  /// Reads an `ARRAY` of `BYTE` and returns its contents, borrowed from the message.
  @inlinable @inline(__always)
  public mutating func byteArray() throws(WireError) -> UnsafeRawBufferPointer {
    let length = Int(try uint32())
    guard length <= Self.maximumArrayLength else {
      throw failure(
        .malformed, "an array of \(length) bytes is longer than the limit of 64 MiB")
    }
    guard length <= remaining else {
      throw failure(.truncated, "an array of \(length) bytes runs past the end of the message")
    }
    let slice = UnsafeRawBufferPointer(rebasing: buffer[position..<position + length])
    position += length
    return slice
  }

  /// Reads an `ARRAY` header and the padding to its first element, and returns the offset
  /// where its elements end.
  @inlinable @inline(__always)
  public mutating func beginArray(elementAlignment: Int) throws(WireError) -> Int {
    let lengthOffset = position
    let length = Int(try uint32())
    guard length <= Self.maximumArrayLength else {
      throw failure(
        .malformed, "an array of \(length) bytes is longer than the limit of 64 MiB",
        at: lengthOffset)
    }
    try align(elementAlignment)
    guard length <= remaining else {
      throw failure(.truncated, "an array of \(length) bytes runs past the end of the message")
    }
    return position + length
  }

  /// Checks that an array's elements ended exactly at its declared end.
  @inlinable @inline(__always)
  public func endArray(_ end: Int) throws(WireError) {
    guard position == end else {
      throw failure(.malformed, "an array's last element runs past its end")
    }
  }

  /// Whether another element starts before `end`.
  @inlinable @inline(__always)
  public func hasElement(before end: Int) -> Bool { position < end }

  /// Moves to `offset`, which must not be past the end.
  @inlinable @inline(__always)
  public mutating func seek(to offset: Int) { position = offset }

  /// Reads a variant's signature, which must be a single complete type.
  public mutating func variantSignature() throws(WireError) -> [UInt8] {
    let (offset, length) = try signature()
    let inner = Array(buffer[offset..<offset + length])
    guard Signature.isSingleCompleteType(inner) else {
      throw failure(
        .malformed, "a variant's signature is not a single complete type", at: offset)
    }
    return inner
  }
}

// MARK: - Values of any type

extension WireReader {
  /// Reads and discards one value of the complete type at `typeSignature[index]`, checking
  /// it, and returns the index just past that type.
  ///
  /// - Parameter depth: How many containers enclose the value.
  public mutating func skipValue(_ typeSignature: [UInt8], at index: Int, depth: Int)
    throws(WireError) -> Int
  {
    let code = typeSignature[index]
    guard
      let typeEnd = Signature.completeTypeEnd(
        in: typeSignature, from: index, dictEntryAllowed: code == UInt8(ascii: "{"))
    else {
      throw failure(.malformed, "an invalid type signature")
    }
    if WireType.isContainer(code) { try checkDepth(depth) }
    switch code {
    case UInt8(ascii: "y"):
      _ = try byte()
    case UInt8(ascii: "b"):
      _ = try bool()
    case UInt8(ascii: "n"), UInt8(ascii: "q"):
      _ = try integer(UInt16.self)
    case UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "h"):
      _ = try uint32()
    case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"):
      _ = try uint64()
    case UInt8(ascii: "s"), UInt8(ascii: "o"):
      _ = try string()
    case UInt8(ascii: "g"):
      let (offset, length) = try signature()
      guard Signature.isValid(Array(buffer[offset..<offset + length])) else {
        throw failure(.malformed, "a SIGNATURE value is not a valid signature", at: offset)
      }
    case UInt8(ascii: "v"):
      let inner = try variantSignature()
      _ = try skipValue(inner, at: 0, depth: depth + 1)
    case UInt8(ascii: "a"):
      let elementIndex = index + 1
      let end = try beginArray(
        elementAlignment: WireType.alignment(of: typeSignature[elementIndex]))
      while hasElement(before: end) {
        _ = try skipValue(typeSignature, at: elementIndex, depth: depth + 1)
      }
      try endArray(end)
    case UInt8(ascii: "("), UInt8(ascii: "{"):
      try align(8)
      var cursor = index + 1
      while cursor < typeEnd - 1 {
        cursor = try skipValue(typeSignature, at: cursor, depth: depth + 1)
      }
    default:
      throw failure(.malformed, "an invalid type code in a signature")
    }
    return typeEnd
  }

  /// Reads one value of the single complete type at `range` of a valid `signature`.
  ///
  /// - Parameter depth: How many containers enclose the value.
  public mutating func value(_ signature: [UInt8], _ range: Range<Int>, depth: Int = 0)
    throws(WireError) -> DBusValue
  {
    let code = signature[range.lowerBound]
    if WireType.isContainer(code) { try checkDepth(depth) }
    switch code {
    case UInt8(ascii: "y"): return .byte(try byte())
    case UInt8(ascii: "b"): return .boolean(try bool())
    case UInt8(ascii: "n"): return .int16(try integer(Int16.self))
    case UInt8(ascii: "q"): return .uint16(try integer(UInt16.self))
    case UInt8(ascii: "i"): return .int32(try integer(Int32.self))
    case UInt8(ascii: "u"): return .uint32(try integer(UInt32.self))
    case UInt8(ascii: "x"): return .int64(try integer(Int64.self))
    case UInt8(ascii: "t"): return .uint64(try integer(UInt64.self))
    case UInt8(ascii: "d"): return .double(try double())
    case UInt8(ascii: "s"): return .string(try string())
    case UInt8(ascii: "o"):
      let start = position
      let text = try string()
      guard let path = ObjectPath(rawValue: text) else {
        throw failure(
          .malformed, "invalid object path '\(text)': \(ObjectPath.violation(in: text) ?? "")",
          at: start)
      }
      return .objectPath(path)
    case UInt8(ascii: "g"): return .signature(try validatedSignature())
    case UInt8(ascii: "v"):
      let signatureOffset = position
      let inner = try validatedSignature()
      guard inner.isSingleCompleteType else {
        throw failure(
          .malformed, "a variant's signature '\(inner)' is not one complete type",
          at: signatureOffset)
      }
      let innerBytes = Array(inner.rawValue.utf8)
      return .variant(try value(innerBytes, 0..<innerBytes.count, depth: depth + 1))
    case UInt8(ascii: "a"):
      return try array(signature, range.lowerBound + 1..<range.upperBound, depth: depth)
    case UInt8(ascii: "("):
      try align(8)
      var fields: [DBusValue] = []
      var index = range.lowerBound + 1
      while index < range.upperBound - 1 {
        let end = WireType.completeTypeEnd(in: signature, from: index)
        fields.append(try value(signature, index..<end, depth: depth + 1))
        index = end
      }
      return .structure(fields)
    default:
      throw failure(
        .malformed, "values of type '\(Character(UnicodeScalar(code)))' are not supported")
    }
  }

  /// An array whose element type is at `element` of `signature`.
  private mutating func array(_ signature: [UInt8], _ element: Range<Int>, depth: Int)
    throws(WireError) -> DBusValue
  {
    let end = try beginArray(
      elementAlignment: WireType.alignment(of: signature[element.lowerBound]))
    let elementType = String(decoding: signature[element], as: UTF8.self)
    if elementType == "y" {
      defer { position = end }
      return .bytes(Array(buffer[position..<end]))
    }
    if signature[element.lowerBound] == UInt8(ascii: "{") {
      let keyEnd = element.lowerBound + 2
      let valueEnd = WireType.completeTypeEnd(in: signature, from: keyEnd)
      var entries: [DBusValue.DictionaryEntry] = []
      while hasElement(before: end) {
        try align(8)
        let key = try value(signature, element.lowerBound + 1..<keyEnd, depth: depth + 1)
        entries.append(.init(key, try value(signature, keyEnd..<valueEnd, depth: depth + 1)))
      }
      try endArray(end)
      let keyType = String(decoding: signature[element.lowerBound + 1..<keyEnd], as: UTF8.self)
      let valueType = String(decoding: signature[keyEnd..<valueEnd], as: UTF8.self)
      return .dictionary(
        keyType: Signature(unchecked: keyType), valueType: Signature(unchecked: valueType),
        entries)
    }
    var elements: [DBusValue] = []
    while hasElement(before: end) {
      elements.append(try value(signature, element, depth: depth + 1))
    }
    try endArray(end)
    return .array(elementType: Signature(unchecked: elementType), elements)
  }

  /// Refuses a container nested ``maximumDepth`` containers deep.
  private func checkDepth(_ depth: Int) throws(WireError) {
    guard depth < Self.maximumDepth else {
      throw failure(.malformed, "containers nest deeper than \(Self.maximumDepth)")
    }
  }
}
