/// Appends D-Bus wire-format values to a little-endian message buffer.
///
/// Offsets, and therefore alignment, are relative to the start of the message, which is the
/// start of ``bytes``. Only what the item codec needs is here; the rules are those of the
/// D-Bus specification, "Marshaling (Wire Format)".
struct DBusWriter {
  private(set) var bytes: [UInt8]

  init(capacity: Int) {
    bytes = []
    bytes.reserveCapacity(capacity)
  }

  var count: Int { bytes.count }

  @inline(__always)
  mutating func pad(to alignment: Int) {
    let remainder = bytes.count & (alignment - 1)
    if remainder != 0 {
      bytes.append(contentsOf: repeatElement(0, count: alignment - remainder))
    }
  }

  @inline(__always)
  mutating func byte(_ value: UInt8) { bytes.append(value) }

  @inline(__always)
  mutating func uint32(_ value: UInt32) {
    pad(to: 4)
    withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
  }

  @inline(__always)
  mutating func double(_ value: Double) {
    pad(to: 8)
    withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
  }

  @inline(__always)
  mutating func int64(_ value: Int64) {
    pad(to: 8)
    withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
  }

  mutating func bool(_ value: Bool) { uint32(value ? 1 : 0) }

  /// Overwrites a `UINT32` written earlier at `offset`.
  mutating func patchUInt32(_ value: UInt32, at offset: Int) {
    let little = value.littleEndian
    bytes[offset] = UInt8(truncatingIfNeeded: little)
    bytes[offset + 1] = UInt8(truncatingIfNeeded: little >> 8)
    bytes[offset + 2] = UInt8(truncatingIfNeeded: little >> 16)
    bytes[offset + 3] = UInt8(truncatingIfNeeded: little >> 24)
  }

  /// A `STRING` or `OBJECT_PATH`: length, UTF-8 bytes, NUL.
  ///
  /// - Returns: `false` without writing when the string contains NUL.
  @inline(__always)
  mutating func string(_ value: String) -> Bool {
    var value = value
    return value.withUTF8 { utf8 in
      if utf8.contains(0) { return false }
      uint32(UInt32(truncatingIfNeeded: utf8.count))
      bytes.append(contentsOf: utf8)
      bytes.append(0)
      return true
    }
  }

  /// A `SIGNATURE`: one length byte, ASCII, NUL.
  mutating func signature(_ value: StaticString) {
    bytes.append(UInt8(truncatingIfNeeded: value.utf8CodeUnitCount))
    value.withUTF8Buffer { bytes.append(contentsOf: $0) }
    bytes.append(0)
  }

  /// Appends raw bytes with no length prefix.
  mutating func byteArrayContents(_ value: UnsafeBufferPointer<UInt8>) {
    bytes.append(contentsOf: value)
  }

  /// An `ARRAY` of `BYTE`.
  mutating func byteArray(_ value: UnsafeRawBufferPointer) {
    uint32(UInt32(truncatingIfNeeded: value.count))
    bytes.append(contentsOf: value)
  }

  /// Starts an `ARRAY`: writes a placeholder length and the padding before the first element.
  ///
  /// - Returns: The mark to pass to ``endArray(_:)``.
  @inline(__always)
  mutating func beginArray(elementAlignment: Int) -> ArrayMark {
    uint32(0)
    let lengthOffset = bytes.count - 4
    pad(to: elementAlignment)
    return ArrayMark(lengthOffset: lengthOffset, start: bytes.count)
  }

  /// Ends an `ARRAY`, patching its length (which excludes the padding after the length).
  @inline(__always)
  mutating func endArray(_ mark: ArrayMark) {
    patchUInt32(UInt32(truncatingIfNeeded: bytes.count - mark.start), at: mark.lengthOffset)
  }

  /// Where an open array's length lives and where its elements start.
  struct ArrayMark {
    var lengthOffset: Int
    var start: Int
  }
}
