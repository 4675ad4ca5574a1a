/// Marshals values in the D-Bus wire format, little-endian.
///
/// Offsets, and therefore alignment, count from the start of the message, which is the
/// start of ``bytes``. The rules are the D-Bus specification's "Marshaling (Wire Format)".
/// The primitives are inlinable, so a caller in another module (the item codec) writes as
/// fast as one inside.
@_spi(Wire) public struct WireWriter {
  /// The message so far.
  public var bytes: [UInt8]

  /// Creates an empty message, with room for `capacity` bytes.
  @inlinable
  public init(capacity: Int = 0) {
    bytes = []
    bytes.reserveCapacity(capacity)
  }

  /// The bytes written so far.
  @inlinable public var count: Int { bytes.count }

  @inlinable @inline(__always)
  public mutating func pad(to alignment: Int) {
    let remainder = bytes.count & (alignment - 1)
    if remainder != 0 { bytes.append(contentsOf: repeatElement(0, count: alignment - remainder)) }
  }

  @inlinable @inline(__always)
  public mutating func byte(_ value: UInt8) { bytes.append(value) }

  /// An integer of any width, aligned to its own size.
  @inlinable @inline(__always)
  public mutating func integer<Value: FixedWidthInteger>(_ value: Value) {
    pad(to: MemoryLayout<Value>.size)
    withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
  }

  @inlinable @inline(__always)
  public mutating func uint32(_ value: UInt32) { integer(value) }

  @inlinable @inline(__always)
  public mutating func int64(_ value: Int64) { integer(value) }

  @inlinable @inline(__always)
  public mutating func double(_ value: Double) { integer(value.bitPattern) }

  @inlinable @inline(__always)
  public mutating func bool(_ value: Bool) { integer(UInt32(value ? 1 : 0)) }

  /// Overwrites a `UINT32` written earlier at `offset`.
  @inlinable @inline(__always)
  public mutating func patch(_ value: UInt32, at offset: Int) {
    let little = value.littleEndian
    bytes[offset] = UInt8(truncatingIfNeeded: little)
    bytes[offset + 1] = UInt8(truncatingIfNeeded: little >> 8)
    bytes[offset + 2] = UInt8(truncatingIfNeeded: little >> 16)
    bytes[offset + 3] = UInt8(truncatingIfNeeded: little >> 24)
  }

  /// A `STRING` or `OBJECT_PATH`: length, UTF-8 bytes, NUL.
  ///
  /// - Returns: `false`, having written nothing, when the string contains NUL.
  @inlinable @inline(__always) @discardableResult
  public mutating func string(_ value: String) -> Bool {
    var value = value
    return value.withUTF8 { utf8 in
      if utf8.contains(0) { return false }
      uint32(UInt32(truncatingIfNeeded: utf8.count))
      bytes.append(contentsOf: utf8)
      bytes.append(0)
      return true
    }
  }

  /// A `SIGNATURE` known when the program is written: one length byte, ASCII, NUL.
  @inlinable @inline(__always)
  public mutating func signature(_ value: StaticString) {
    bytes.append(UInt8(truncatingIfNeeded: value.utf8CodeUnitCount))
    value.withUTF8Buffer { bytes.append(contentsOf: $0) }
    bytes.append(0)
  }

  /// A `SIGNATURE`; the value must be a valid signature, so at most 255 bytes
  /// (``DBusValue/validate()`` checks every signature a value carries).
  public mutating func signature(validated value: String) {
    precondition(value.utf8.count <= Signature.maximumLength, "unchecked signature '\(value)'")
    bytes.append(UInt8(truncatingIfNeeded: value.utf8.count))
    bytes.append(contentsOf: value.utf8)
    bytes.append(0)
  }

  /// The `SIGNATURE` of a sequence of values (a message body); the values must be valid
  /// (``DBusValue/validate()``), so their signature is at most 255 bytes.
  ///
  /// Basic values cost one byte each, with no intermediate string.
  public mutating func signature(ofBody values: [DBusValue]) {
    let lengthOffset = bytes.count
    bytes.append(0)
    for value in values { typeCodes(of: value) }
    let length = bytes.count - lengthOffset - 1
    precondition(length <= Signature.maximumLength, "unchecked body signature")
    bytes[lengthOffset] = UInt8(truncatingIfNeeded: length)
    bytes.append(0)
  }

  private mutating func typeCodes(of value: DBusValue) {
    if let code = value.typeCode {
      bytes.append(code)
    } else if case .bytes = value {
      bytes.append(UInt8(ascii: "a"))
      bytes.append(UInt8(ascii: "y"))
    } else {
      bytes.append(contentsOf: value.signatureString.utf8)
    }
  }

  /// Appends raw bytes with no length prefix.
  @inlinable @inline(__always)
  public mutating func raw(_ value: UnsafeBufferPointer<UInt8>) { bytes.append(contentsOf: value) }

  /// An `ARRAY` of `BYTE`.
  @inlinable @inline(__always)
  public mutating func byteArray(_ value: UnsafeRawBufferPointer) {
    uint32(UInt32(truncatingIfNeeded: value.count))
    bytes.append(contentsOf: value)
  }

  /// Starts an `ARRAY`: writes a placeholder length and the padding before the first element.
  ///
  /// - Returns: The mark to pass to ``endArray(_:)``.
  @inlinable @inline(__always)
  public mutating func beginArray(elementAlignment: Int) -> ArrayMark {
    uint32(0)
    let lengthOffset = bytes.count - 4
    pad(to: elementAlignment)
    return ArrayMark(lengthOffset: lengthOffset, start: bytes.count)
  }

  /// Ends an `ARRAY`, patching its length, which counts from the first element (the padding
  /// after the length is not part of it).
  @inlinable @inline(__always)
  public mutating func endArray(_ mark: ArrayMark) {
    patch(UInt32(truncatingIfNeeded: bytes.count - mark.start), at: mark.lengthOffset)
  }

  /// Where an open array's length lives and where its elements start.
  public struct ArrayMark {
    @usableFromInline var lengthOffset: Int
    @usableFromInline var start: Int

    @inlinable
    init(lengthOffset: Int, start: Int) {
      self.lengthOffset = lengthOffset
      self.start = start
    }
  }

  /// Any value; the value must already be valid (``DBusValue/validate()``).
  public mutating func value(_ value: DBusValue) {
    switch value {
    case .byte(let byte): bytes.append(byte)
    case .boolean(let flag): bool(flag)
    case .int16(let number): integer(number)
    case .uint16(let number): integer(number)
    case .int32(let number): integer(number)
    case .uint32(let number): integer(number)
    case .int64(let number): integer(number)
    case .uint64(let number): integer(number)
    case .double(let number): double(number)
    case .string(let text): string(text)
    case .objectPath(let path): string(path.rawValue)
    case .signature(let signature): self.signature(validated: signature.rawValue)
    case .bytes(let content):
      uint32(UInt32(truncatingIfNeeded: content.count))
      bytes.append(contentsOf: content)
    case .array(let elementType, let elements):
      let mark = beginArray(
        elementAlignment: WireType.alignment(of: elementType.rawValue.utf8.first ?? 0))
      for element in elements { self.value(element) }
      endArray(mark)
    case .dictionary(_, _, let entries):
      let mark = beginArray(elementAlignment: 8)
      for entry in entries {
        pad(to: 8)
        self.value(entry.key)
        self.value(entry.value)
      }
      endArray(mark)
    case .structure(let fields):
      pad(to: 8)
      for field in fields { self.value(field) }
    case .variant(let inner):
      signature(validated: inner.signatureString)
      self.value(inner)
    }
  }
}

/// Facts about type codes that both directions of the wire format need.
@_spi(Wire) public enum WireType {
  /// The alignment of a value whose signature starts with `code`.
  public static func alignment(of code: UInt8) -> Int {
    switch code {
    case UInt8(ascii: "n"), UInt8(ascii: "q"): 2
    case UInt8(ascii: "b"), UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "s"),
      UInt8(ascii: "o"), UInt8(ascii: "a"), UInt8(ascii: "h"):
      4
    case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "("),
      UInt8(ascii: "{"):
      8
    default: 1
    }
  }

  /// Whether values of a type code hold other values: arrays, structs, dict entries and
  /// variants.
  public static func isContainer(_ code: UInt8) -> Bool {
    switch code {
    case UInt8(ascii: "a"), UInt8(ascii: "("), UInt8(ascii: "{"), UInt8(ascii: "v"): true
    default: false
    }
  }

  /// The end of the single complete type that starts at `start` in a valid signature.
  public static func completeTypeEnd(in signature: [UInt8], from start: Int) -> Int {
    var index = start
    var open = 0
    repeat {
      switch signature[index] {
      case UInt8(ascii: "("), UInt8(ascii: "{"): open += 1
      case UInt8(ascii: ")"), UInt8(ascii: "}"): open -= 1
      default: break
      }
      index += 1
    } while open > 0 || signature[index - 1] == UInt8(ascii: "a")
    return index
  }
}
