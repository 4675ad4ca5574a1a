/// Appends little-endian integers and byte strings to a buffer.
struct ByteWriter {
  var bytes: [UInt8] = []

  mutating func append<T: FixedWidthInteger>(_ value: T) {
    withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
  }

  mutating func append(contentsOf other: some Sequence<UInt8>) {
    bytes.append(contentsOf: other)
  }
}

/// Reads little-endian integers and byte strings from a buffer, never past its end.
///
/// Every read returns `nil` instead of reading out of bounds, and the reader index moves
/// only when a read succeeds.
struct ByteReader {
  let bytes: [UInt8]
  private(set) var readerIndex: Int

  init(_ bytes: [UInt8], at index: Int = 0) {
    self.bytes = bytes
    self.readerIndex = index
  }

  var remaining: Int { bytes.count - readerIndex }

  mutating func read<T: FixedWidthInteger>(_: T.Type) -> T? {
    let size = MemoryLayout<T>.size
    guard remaining >= size else { return nil }
    var value: T = 0
    for offset in 0..<size {
      value |= T(truncatingIfNeeded: bytes[readerIndex + offset]) << (8 * offset)
    }
    readerIndex += size
    return value
  }

  mutating func readBytes(_ count: Int) -> ArraySlice<UInt8>? {
    guard count >= 0, remaining >= count else { return nil }
    defer { readerIndex += count }
    return bytes[readerIndex..<readerIndex + count]
  }
}
