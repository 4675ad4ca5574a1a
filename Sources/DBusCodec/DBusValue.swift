/// A typed D-Bus value, as carried in a message body.
///
/// ```swift
/// let body: [DBusValue] = [
///   .string("group.example.saved"),
///   .uint64(42),
///   .dictionary(["title": .variant(.string("Hello"))]),
/// ]
/// ```
///
/// Arrays carry their element type so that empty arrays keep their signature. Unix file
/// descriptors (`h`) are not supported.
///
/// Only variants and dictionaries are boxed: a basic value or a string is stored inline,
/// so a message body of them costs one array, not an allocation per value (the body of
/// every post and every received signal).
public enum DBusValue: Hashable, Sendable {
  case byte(UInt8)
  case boolean(Bool)
  case int16(Int16)
  case uint16(UInt16)
  case int32(Int32)
  case uint32(UInt32)
  case int64(Int64)
  case uint64(UInt64)
  case double(Double)
  case string(String)
  case objectPath(ObjectPath)
  case signature(Signature)
  /// A byte array, `ay`, stored compactly.
  case bytes([UInt8])
  /// An array whose elements all have the single complete type `elementType`.
  case array(elementType: Signature, [DBusValue])
  /// A dictionary, `a{kv}`, in wire order.
  ///
  /// Keys have a basic type.
  indirect case dictionary(keyType: Signature, valueType: Signature, [DictionaryEntry])
  /// A struct, `(...)`, with at least one field.
  case structure([DBusValue])
  /// A variant, `v`: a value that carries its own type.
  indirect case variant(DBusValue)

  /// One key and value of a ``DBusValue/dictionary(keyType:valueType:_:)``.
  public struct DictionaryEntry: Hashable, Sendable {
    public var key: DBusValue
    public var value: DBusValue
    public init(_ key: DBusValue, _ value: DBusValue) {
      self.key = key
      self.value = value
    }
  }

  /// Makes the common `a{sv}` dictionary from string keys, in key order.
  public static func dictionary(_ entries: [String: DBusValue]) -> DBusValue {
    .dictionary(
      keyType: "s", valueType: "v",
      entries.sorted { $0.key < $1.key }.map {
        DictionaryEntry(.string($0.key), .variant($0.value))
      })
  }

  /// The value's signature: one complete type.
  public var signature: Signature {
    Signature(unchecked: signatureString)
  }

  package var signatureString: String {
    switch self {
    case .bytes: "ay"
    case .array(let element, _): "a" + element.rawValue
    case .dictionary(let key, let value, _): "a{" + key.rawValue + value.rawValue + "}"
    case .structure(let fields): "(" + fields.map(\.signatureString).joined() + ")"
    default: typeCode.map { String(UnicodeScalar($0)) } ?? ""
    }
  }

  /// The value's signature when it is one type code (a basic type or a variant); nil for
  /// arrays, dictionaries and structures.
  package var typeCode: UInt8? {
    switch self {
    case .byte: UInt8(ascii: "y")
    case .boolean: UInt8(ascii: "b")
    case .int16: UInt8(ascii: "n")
    case .uint16: UInt8(ascii: "q")
    case .int32: UInt8(ascii: "i")
    case .uint32: UInt8(ascii: "u")
    case .int64: UInt8(ascii: "x")
    case .uint64: UInt8(ascii: "t")
    case .double: UInt8(ascii: "d")
    case .string: UInt8(ascii: "s")
    case .objectPath: UInt8(ascii: "o")
    case .signature: UInt8(ascii: "g")
    case .variant: UInt8(ascii: "v")
    case .bytes, .array, .dictionary, .structure: nil
    }
  }

  /// Checks that containers are well formed: element types are single complete types
  /// that match every element, dictionary keys are basic, structs are not empty, and
  /// the whole signature is within the specification's limits.
  ///
  /// - Throws: ``DBusError`` naming the first problem.
  public func validate() throws(DBusError) {
    try validateStructure()
    switch self {
    case .array, .dictionary, .structure, .variant:
      // Basic values always have a valid signature; containers may nest too deep.
      if let rule = Signature.violation(in: signatureString) {
        throw DBusError(.invalidSignature, "value of type '\(signatureString)': \(rule)")
      }
    default:
      break
    }
  }

  /// Checks element types, keys, struct fields and strings, recursively; the signature's
  /// own limits are checked once, by ``validate()``.
  private func validateStructure() throws(DBusError) {
    switch self {
    case .array(let element, let values):
      guard element.isSingleCompleteType else {
        throw DBusError(
          .invalidSignature, "array element type '\(element)' is not one complete type")
      }
      for value in values {
        try value.validateStructure()
        guard value.signatureString == element.rawValue else {
          throw DBusError(
            .invalidSignature,
            "array of '\(element)' holds a value of type '\(value.signatureString)'")
        }
      }
    case .dictionary(let key, let valueType, let entries):
      guard key.rawValue.utf8.count == 1, Signature.isBasic(key.rawValue.utf8.first ?? 0) else {
        throw DBusError(.invalidSignature, "dictionary key type '\(key)' is not a basic type")
      }
      guard valueType.isSingleCompleteType else {
        throw DBusError(
          .invalidSignature, "dictionary value type '\(valueType)' is not one complete type")
      }
      for entry in entries {
        try entry.key.validateStructure()
        try entry.value.validateStructure()
        guard entry.key.signatureString == key.rawValue,
          entry.value.signatureString == valueType.rawValue
        else {
          throw DBusError(
            .invalidSignature,
            "dictionary of '\(key)' to '\(valueType)' holds an entry of types "
              + "'\(entry.key.signatureString)' and '\(entry.value.signatureString)'")
        }
      }
    case .structure(let fields):
      guard !fields.isEmpty else { throw DBusError(.invalidSignature, "a struct needs a field") }
      for field in fields { try field.validateStructure() }
    case .variant(let inner):
      try inner.validateStructure()
      // A variant carries its content's signature, which has the signature's own limits.
      if let rule = Signature.violation(in: inner.signatureString) {
        throw DBusError(.invalidSignature, "a variant holding '\(inner.signatureString)': \(rule)")
      }
    case .string(let text):
      if text.utf8.contains(0) {
        throw DBusError(.invalidArgs, "a D-Bus string must not contain a NUL character")
      }
    default:
      break
    }
  }
}

extension DBusValue {
  /// The string, if this is a `s`, `o` or `g` value.
  public var stringValue: String? {
    switch self {
    case .string(let value): value
    case .objectPath(let value): value.rawValue
    case .signature(let value): value.rawValue
    default: nil
    }
  }

  /// The value as an unsigned 64-bit integer, if it is an unsigned integer.
  public var uint64Value: UInt64? {
    switch self {
    case .byte(let value): UInt64(value)
    case .uint16(let value): UInt64(value)
    case .uint32(let value): UInt64(value)
    case .uint64(let value): value
    default: nil
    }
  }

  /// The value as a signed 64-bit integer, if it is a signed integer.
  public var int64Value: Int64? {
    switch self {
    case .int16(let value): Int64(value)
    case .int32(let value): Int64(value)
    case .int64(let value): value
    default: nil
    }
  }

  /// The boolean, if this is a `b` value.
  public var boolValue: Bool? {
    if case .boolean(let value) = self { return value }
    return nil
  }

  /// The content of a variant, or the value itself when it is not a variant.
  public var unwrappingVariant: DBusValue {
    if case .variant(let inner) = self { return inner.unwrappingVariant }
    return self
  }

  /// The entries of an `a{s…}` dictionary keyed by string, variants unwrapped.
  public var stringDictionary: [String: DBusValue]? {
    guard case .dictionary(_, _, let entries) = self else { return nil }
    var result: [String: DBusValue] = [:]
    for entry in entries {
      guard let key = entry.key.stringValue else { return nil }
      result[key] = entry.value.unwrappingVariant
    }
    return result
  }
}

extension DBusValue: ExpressibleByStringLiteral {
  public init(stringLiteral value: String) { self = .string(value) }
}
