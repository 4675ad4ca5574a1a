/// Marshals values in the D-Bus wire format, little-endian.
///
/// Offsets, and therefore alignment, count from the start of the message, which is the
/// start of ``bytes``. The rules are the D-Bus specification's "Marshaling (Wire Format)".
struct WireWriter {
  private(set) var bytes: [UInt8] = []

  mutating func pad(to alignment: Int) {
    let remainder = bytes.count & (alignment - 1)
    if remainder != 0 { bytes.append(contentsOf: repeatElement(0, count: alignment - remainder)) }
  }

  /// An integer of any width, aligned to its own size.
  mutating func integer<Value: FixedWidthInteger>(_ value: Value) {
    pad(to: MemoryLayout<Value>.size)
    withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
  }

  /// A `STRING` or `OBJECT_PATH`: length, UTF-8 bytes, NUL.
  mutating func string(_ value: String) {
    integer(UInt32(truncatingIfNeeded: value.utf8.count))
    bytes.append(contentsOf: value.utf8)
    bytes.append(0)
  }

  /// A `SIGNATURE`: one length byte, ASCII, NUL; the value must be a valid signature, so at
  /// most 255 bytes (``Message/validate()`` checks every signature a message carries).
  mutating func signature(_ value: String) {
    precondition(value.utf8.count <= Signature.maximumLength, "unchecked signature '\(value)'")
    bytes.append(UInt8(truncatingIfNeeded: value.utf8.count))
    bytes.append(contentsOf: value.utf8)
    bytes.append(0)
  }

  /// Overwrites a `UINT32` written earlier at `offset`.
  mutating func patch(_ value: UInt32, at offset: Int) {
    withUnsafeBytes(of: value.littleEndian) {
      for index in 0..<4 { bytes[offset + index] = $0[index] }
    }
  }

  /// An `ARRAY`: its length, the padding to its first element, then what `elements` writes.
  ///
  /// The length counts from the first element, excluding that padding.
  mutating func array(elementAlignment: Int, _ elements: (inout WireWriter) -> Void) {
    integer(UInt32(0))
    let lengthOffset = bytes.count - 4
    pad(to: elementAlignment)
    let start = bytes.count
    elements(&self)
    patch(UInt32(truncatingIfNeeded: bytes.count - start), at: lengthOffset)
  }

  /// Any value; the value must already be valid (``DBusValue/validate()``).
  mutating func value(_ value: DBusValue) {
    switch value {
    case .byte(let byte): bytes.append(byte)
    case .boolean(let flag): integer(UInt32(flag ? 1 : 0))
    case .int16(let number): integer(number)
    case .uint16(let number): integer(number)
    case .int32(let number): integer(number)
    case .uint32(let number): integer(number)
    case .int64(let number): integer(number)
    case .uint64(let number): integer(number)
    case .double(let number): integer(number.bitPattern)
    case .string(let text): string(text)
    case .objectPath(let path): string(path.rawValue)
    case .signature(let signature): self.signature(signature.rawValue)
    case .bytes(let content):
      array(elementAlignment: 1) { $0.bytes.append(contentsOf: content) }
    case .array(let elementType, let elements):
      array(elementAlignment: WireType.alignment(of: elementType.rawValue.utf8.first ?? 0)) {
        for element in elements { $0.value(element) }
      }
    case .dictionary(_, _, let entries):
      array(elementAlignment: 8) {
        for entry in entries {
          $0.pad(to: 8)
          $0.value(entry.key)
          $0.value(entry.value)
        }
      }
    case .structure(let fields):
      pad(to: 8)
      for field in fields { self.value(field) }
    case .variant(let inner):
      signature(inner.signatureString)
      self.value(inner)
    }
  }
}

/// Facts about type codes that both directions of the wire format need.
enum WireType {
  /// The alignment of a value whose signature starts with `code`.
  static func alignment(of code: UInt8) -> Int {
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

  /// The end of the single complete type that starts at `start` in a valid signature.
  static func completeTypeEnd(in signature: [UInt8], from start: Int) -> Int {
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
