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

extension DBusReader {
  /// Reads and discards one value of the complete type at `signature[index]`, validating it,
  /// and returns the index just past that type.
  mutating func skipValue(_ typeSignature: [UInt8], at index: Int, depth: Int)
    throws(ItemCodecError) -> Int
  {
    guard depth <= DBusSignature.maximumValueDepth else {
      throw failure(.malformed, "values nest deeper than 64 containers")
    }
    let signatureBytes = typeSignature
    let isDictEntry = signatureBytes[index] == UInt8(ascii: "{")
    guard
      let typeEnd = DBusSignature.completeTypeEnd(
        signatureBytes, from: index, dictEntryAllowed: isDictEntry)
    else {
      throw failure(.malformed, "an invalid type signature")
    }
    let code = signatureBytes[index]
    switch code {
    case UInt8(ascii: "y"):
      _ = try byte()
    case UInt8(ascii: "b"):
      _ = try bool()
    case UInt8(ascii: "n"), UInt8(ascii: "q"):
      try align(2)
      guard remaining >= 2 else {
        throw failure(.truncated, "the input ends inside a 16-bit integer")
      }
      seek(to: position + 2)
    case UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "h"):
      _ = try uint32()
    case UInt8(ascii: "x"), UInt8(ascii: "t"), UInt8(ascii: "d"):
      _ = try uint64()
    case UInt8(ascii: "s"), UInt8(ascii: "o"):
      _ = try string(maximumLength: DBusReader.maximumArrayLength)
    case UInt8(ascii: "g"):
      let (offset, length) = try signature()
      var inner: [UInt8] = []
      for index in offset..<offset + length { inner.append(peek(at: index)) }
      guard length == 0 || DBusSignature.completeTypeEnd(inner, from: 0) != nil else {
        throw failure(.malformed, "a SIGNATURE value is not a valid signature", at: offset)
      }
    case UInt8(ascii: "v"):
      let inner = try variantSignature()
      _ = try skipValue(inner, at: 0, depth: depth + 1)
    case UInt8(ascii: "a"):
      let elementIndex = index + 1
      let end = try beginArray(
        elementAlignment: DBusSignature.alignment(of: signatureBytes[elementIndex]))
      while hasElement(before: end) {
        _ = try skipValue(signatureBytes, at: elementIndex, depth: depth + 1)
      }
      try endArray(end)
    case UInt8(ascii: "("), UInt8(ascii: "{"):
      try align(8)
      var cursor = index + 1
      while cursor < typeEnd - 1 {
        cursor = try skipValue(signatureBytes, at: cursor, depth: depth + 1)
      }
    default:
      throw failure(.malformed, "an invalid type code in a signature")
    }
    return typeEnd
  }

  /// Reads a variant's signature, which must be a single complete type.
  mutating func variantSignature() throws(ItemCodecError) -> [UInt8] {
    let (offset, length) = try signature()
    var inner: [UInt8] = []
    inner.reserveCapacity(length)
    for index in offset..<offset + length { inner.append(peek(at: index)) }
    guard DBusSignature.isSingleCompleteType(inner) else {
      throw failure(.malformed, "a VARIANT's signature is not a single complete type", at: offset)
    }
    return inner
  }
}
