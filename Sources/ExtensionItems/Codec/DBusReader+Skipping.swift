extension DBusReader {
  /// Reads and discards one value of the complete type at `typeSignature[index]`, validating it,
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
