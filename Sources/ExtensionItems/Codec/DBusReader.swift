#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Reads D-Bus wire-format values from a message in either byte order, validating every
/// marshalling rule it relies on and never reading outside the buffer.
///
/// The reader borrows its buffer: use it only inside the `withUnsafeBytes` scope that made it.
struct DBusReader {
  private let buffer: UnsafeRawBufferPointer
  private(set) var position: Int
  let bigEndian: Bool

  /// The longest array the specification allows, 64 MiB.
  static let maximumArrayLength = 67_108_864

  init(_ buffer: UnsafeRawBufferPointer, bigEndian: Bool, position: Int = 0) {
    self.buffer = buffer
    self.bigEndian = bigEndian
    self.position = position
  }

  var count: Int { buffer.count }
  var remaining: Int { buffer.count - position }

  func failure(_ code: ItemCodecError.Code, _ message: String, at offset: Int? = nil)
    -> ItemCodecError
  {
    ItemCodecError(code, offset: offset ?? position, message)
  }

  private func truncated(_ what: String) -> ItemCodecError {
    ItemCodecError(.truncated, offset: position, "the input ends inside \(what)")
  }

  /// Skips the padding to `alignment`, which must be zero bytes.
  @inline(__always)
  mutating func align(_ alignment: Int) throws(ItemCodecError) {
    let target = (position + alignment - 1) & ~(alignment - 1)
    guard target <= buffer.count else { throw truncated("alignment padding") }
    while position < target {
      guard buffer[position] == 0 else {
        throw failure(.malformed, "alignment padding must be zero bytes")
      }
      position += 1
    }
  }

  @inline(__always)
  mutating func byte() throws(ItemCodecError) -> UInt8 {
    guard position < buffer.count else { throw truncated("a byte") }
    defer { position += 1 }
    return buffer[position]
  }

  @inline(__always)
  mutating func uint32() throws(ItemCodecError) -> UInt32 {
    try align(4)
    guard remaining >= 4 else { throw truncated("a 32-bit integer") }
    let raw = buffer.loadUnaligned(fromByteOffset: position, as: UInt32.self)
    position += 4
    return bigEndian ? UInt32(bigEndian: raw) : UInt32(littleEndian: raw)
  }

  @inline(__always)
  mutating func uint64() throws(ItemCodecError) -> UInt64 {
    try align(8)
    guard remaining >= 8 else { throw truncated("a 64-bit value") }
    let raw = buffer.loadUnaligned(fromByteOffset: position, as: UInt64.self)
    position += 8
    return bigEndian ? UInt64(bigEndian: raw) : UInt64(littleEndian: raw)
  }

  mutating func double() throws(ItemCodecError) -> Double {
    Double(bitPattern: try uint64())
  }

  mutating func bool() throws(ItemCodecError) -> Bool {
    let start = position
    switch try uint32() {
    case 0: return false
    case 1: return true
    default: throw failure(.malformed, "a BOOLEAN must be 0 or 1", at: start)
    }
  }

  /// Reads a `STRING` or `OBJECT_PATH` body: length, bytes, NUL, validating UTF-8.
  mutating func string(maximumLength: Int) throws(ItemCodecError) -> String {
    let length = Int(try uint32())
    let start = position
    guard length <= maximumLength else {
      throw failure(
        .stringTooLong,
        "a string of \(length) bytes exceeds \(maximumLength) (maximumStringLength)", at: start)
    }
    guard length < remaining else { throw truncated("a string") }
    return try text(at: start, length: length)
  }

  /// Reads a `SIGNATURE` and returns the offset and length of its characters.
  mutating func signature() throws(ItemCodecError) -> (offset: Int, length: Int) {
    let length = Int(try byte())
    let start = position
    guard length < remaining else { throw truncated("a signature") }
    guard buffer[start + length] == 0 else {
      throw failure(.malformed, "a signature must end with a NUL byte", at: start + length)
    }
    position = start + length + 1
    return (start, length)
  }

  /// Whether the bytes at `offset` equal `expected`.
  func bytesEqual(at offset: Int, length: Int, _ expected: StaticString) -> Bool {
    guard length == expected.utf8CodeUnitCount else { return false }
    return expected.withUTF8Buffer { expectedBytes in
      memcmp(buffer.baseAddress! + offset, expectedBytes.baseAddress!, length) == 0
    }
  }

  /// The byte at `offset`, which the caller has bounds-checked.
  func peek(at offset: Int) -> UInt8 { buffer[offset] }

  private mutating func text(at start: Int, length: Int) throws(ItemCodecError) -> String {
    let base = buffer.baseAddress! + start
    guard buffer[start + length] == 0 else {
      throw failure(.malformed, "a string must end with a NUL byte", at: start + length)
    }
    if length > 0, memchr(base, 0, length) != nil {
      throw failure(.invalidString, "a string contains a NUL byte", at: start)
    }
    guard
      let string = String(
        validatingCString: base.assumingMemoryBound(to: CChar.self))
    else {
      throw failure(.invalidString, "a string is not valid UTF-8", at: start)
    }
    position = start + length + 1
    return string
  }

  /// Reads an `ARRAY` of `BYTE`.
  mutating func byteArray(_ body: (UnsafeRawBufferPointer) throws(ItemCodecError) -> Void)
    throws(ItemCodecError)
  {
    let length = Int(try uint32())
    guard length <= Self.maximumArrayLength else {
      throw failure(.malformed, "an array is longer than 64 MiB")
    }
    guard length <= remaining else { throw truncated("a byte array") }
    let slice = UnsafeRawBufferPointer(rebasing: buffer[position..<position + length])
    position += length
    try body(slice)
  }

  /// Reads an `ARRAY` header and returns the offset where its elements end.
  mutating func beginArray(elementAlignment: Int) throws(ItemCodecError) -> Int {
    let lengthOffset = position
    let length = Int(try uint32())
    guard length <= Self.maximumArrayLength else {
      throw failure(.malformed, "an array is longer than 64 MiB", at: lengthOffset)
    }
    try align(elementAlignment)
    guard length <= remaining else { throw truncated("an array") }
    return position + length
  }

  /// Checks that an array's elements ended exactly at its declared end.
  func endArray(_ end: Int) throws(ItemCodecError) {
    guard position == end else {
      throw failure(.malformed, "an array's contents overrun its declared length")
    }
  }

  /// Whether another element starts before `end`.
  func hasElement(before end: Int) -> Bool { position < end }

  /// Moves to `offset`, which must not be past the end.
  mutating func seek(to offset: Int) { position = offset }
}
