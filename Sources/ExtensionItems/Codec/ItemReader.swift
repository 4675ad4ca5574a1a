@_spi(Wire) import DBusCodec

/// The D-Bus codec's ``WireReader``, throwing the item codec's errors.
///
/// Every method forwards to the wire reader and gives its ``WireError`` the item codec's code
/// (truncated, malformed, invalid string, string too long) at the same offset; the reader's
/// rules are DBusCodec's.
struct ItemReader {
  private var wire: WireReader

  init(_ buffer: UnsafeRawBufferPointer, bigEndian: Bool, position: Int = 0) {
    wire = WireReader(buffer, bigEndian: bigEndian, position: position)
  }

  /// The offset of the next byte to read.
  var position: Int { wire.position }
  /// The bytes after ``position``.
  var remaining: Int { wire.remaining }

  /// An item codec error at `offset`, the current position by default.
  func failure(_ code: ItemCodecError.Code, _ message: String, at offset: Int? = nil)
    -> ItemCodecError
  {
    ItemCodecError(code, offset: offset ?? wire.position, message)
  }

  /// The value `body` reads, or its error with the item codec's code.
  @inline(__always)
  private static func forward<Value>(_ body: () throws(WireError) -> Value)
    throws(ItemCodecError) -> Value
  {
    do {
      return try body()
    } catch {
      let code: ItemCodecError.Code =
        switch error.problem {
        case .truncated: .truncated
        case .malformed: .malformed
        case .invalidString: .invalidString
        case .stringTooLong: .stringTooLong
        }
      let limit = error.problem == .stringTooLong ? " (maximumStringLength)" : ""
      throw ItemCodecError(code, offset: error.offset, error.message + limit)
    }
  }

  @inline(__always)
  mutating func align(_ alignment: Int) throws(ItemCodecError) {
    try Self.forward { () throws(WireError) in try wire.align(alignment) }
  }

  @inline(__always)
  mutating func byte() throws(ItemCodecError) -> UInt8 {
    try Self.forward { () throws(WireError) in try wire.byte() }
  }

  @inline(__always)
  mutating func uint32() throws(ItemCodecError) -> UInt32 {
    try Self.forward { () throws(WireError) in try wire.uint32() }
  }

  @inline(__always)
  mutating func uint64() throws(ItemCodecError) -> UInt64 {
    try Self.forward { () throws(WireError) in try wire.uint64() }
  }

  @inline(__always)
  mutating func double() throws(ItemCodecError) -> Double {
    try Self.forward { () throws(WireError) in try wire.double() }
  }

  @inline(__always)
  mutating func bool() throws(ItemCodecError) -> Bool {
    try Self.forward { () throws(WireError) in try wire.bool() }
  }

  @inline(__always)
  mutating func string(maximumLength: Int) throws(ItemCodecError) -> String {
    try Self.forward { () throws(WireError) in try wire.string(maximumLength: maximumLength) }
  }

  @inline(__always)
  mutating func signature() throws(ItemCodecError) -> (offset: Int, length: Int) {
    try Self.forward { () throws(WireError) in try wire.signature() }
  }

  func bytesEqual(at offset: Int, length: Int, _ expected: StaticString) -> Bool {
    wire.bytesEqual(at: offset, length: length, expected)
  }

  func peek(at offset: Int) -> UInt8 { wire.peek(at: offset) }

  /// Reads an `ARRAY` of `BYTE`, lending its contents to `body`.
  @inline(__always)
  mutating func byteArray(_ body: (UnsafeRawBufferPointer) throws(ItemCodecError) -> Void)
    throws(ItemCodecError)
  {
    try body(try Self.forward { () throws(WireError) in try wire.byteArray() })
  }

  @inline(__always)
  mutating func beginArray(elementAlignment: Int) throws(ItemCodecError) -> Int {
    try Self.forward { () throws(WireError) in
      try wire.beginArray(elementAlignment: elementAlignment)
    }
  }

  @inline(__always)
  func endArray(_ end: Int) throws(ItemCodecError) {
    try Self.forward { () throws(WireError) in try wire.endArray(end) }
  }

  func hasElement(before end: Int) -> Bool { wire.hasElement(before: end) }

  mutating func seek(to offset: Int) { wire.seek(to: offset) }

  mutating func skipValue(_ typeSignature: [UInt8], at index: Int, depth: Int)
    throws(ItemCodecError) -> Int
  {
    try Self.forward { () throws(WireError) in
      try wire.skipValue(typeSignature, at: index, depth: depth)
    }
  }

  mutating func variantSignature() throws(ItemCodecError) -> [UInt8] {
    try Self.forward { () throws(WireError) in try wire.variantSignature() }
  }
}
