/// D-Bus type signatures: validation and alignment, per the specification's "Valid
/// Signatures" rules (single complete types, at most 32 nested arrays and 32 nested structs,
/// dict entries only as array elements with a basic key).
enum DBusSignature {
  /// The most containers a value may nest, variants included.
  static let maximumValueDepth = 64

  static func isBasic(_ code: UInt8) -> Bool {
    switch code {
    case UInt8(ascii: "y"), UInt8(ascii: "b"), UInt8(ascii: "n"), UInt8(ascii: "q"),
      UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "x"), UInt8(ascii: "t"),
      UInt8(ascii: "d"), UInt8(ascii: "h"), UInt8(ascii: "s"), UInt8(ascii: "o"),
      UInt8(ascii: "g"):
      return true
    default:
      return false
    }
  }

  /// The alignment of a type code's values.
  static func alignment(of code: UInt8) -> Int {
    switch code {
    case UInt8(ascii: "y"), UInt8(ascii: "g"), UInt8(ascii: "v"): return 1
    case UInt8(ascii: "n"), UInt8(ascii: "q"): return 2
    case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"), UInt8(ascii: "("),
      UInt8(ascii: "{"):
      return 8
    default: return 4
    }
  }

  /// The index just past the single complete type that starts at `index`, or `nil` when the
  /// signature is not valid there.
  ///
  /// A dict entry (`{kv}`) is a complete type only where `dictEntryAllowed` says so: as the
  /// element of an array.
  static func completeTypeEnd(
    _ signature: [UInt8], from index: Int, arrayDepth: Int = 0, structDepth: Int = 0,
    dictEntryAllowed: Bool = false
  ) -> Int? {
    guard index < signature.count else { return nil }
    let code = signature[index]
    if isBasic(code) || code == UInt8(ascii: "v") { return index + 1 }
    switch code {
    case UInt8(ascii: "a"):
      guard arrayDepth < 32 else { return nil }
      return completeTypeEnd(
        signature, from: index + 1, arrayDepth: arrayDepth + 1, structDepth: structDepth,
        dictEntryAllowed: true)
    case UInt8(ascii: "{"):
      guard dictEntryAllowed, structDepth < 32, index + 1 < signature.count,
        isBasic(signature[index + 1]),
        let valueEnd = completeTypeEnd(
          signature, from: index + 2, arrayDepth: arrayDepth, structDepth: structDepth + 1),
        valueEnd < signature.count, signature[valueEnd] == UInt8(ascii: "}")
      else { return nil }
      return valueEnd + 1
    case UInt8(ascii: "("):
      guard structDepth < 32 else { return nil }
      var cursor = index + 1
      var members = 0
      while cursor < signature.count, signature[cursor] != UInt8(ascii: ")") {
        guard
          let next = completeTypeEnd(
            signature, from: cursor, arrayDepth: arrayDepth, structDepth: structDepth + 1)
        else { return nil }
        cursor = next
        members += 1
      }
      guard cursor < signature.count, members > 0 else { return nil }
      return cursor + 1
    default:
      return nil
    }
  }

  /// Whether `signature` is exactly one complete type.
  static func isSingleCompleteType(_ signature: [UInt8]) -> Bool {
    completeTypeEnd(signature, from: 0) == signature.count
  }
}
