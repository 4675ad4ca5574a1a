/// A type signature: a sequence of complete D-Bus types such as `s`, `a{sv}` or `(st)`.
///
/// Valid: the empty signature, `s`, `sat`, `a{sv}`, `(ia(ss))`. Invalid: `z` (unknown
/// type code), `a` (array of nothing), `()` (empty struct), `{sv}` (dict entry outside an
/// array), `a{vs}` (key is not a basic type), `((` (unbalanced), more than 32 nested arrays
/// or structs, signatures over 255 bytes.
public struct Signature: ValidatedName {
  public let rawValue: String
  public init(unchecked string: String) { rawValue = string }
  public static var kind: String { "signature" }

  /// The maximum length of a signature in bytes.
  public static let maximumLength = 255
  /// The maximum nesting of arrays, and separately of structs.
  public static let maximumDepth = 32

  public static func violation(in string: String) -> String? {
    let bytes = Array(string.utf8)
    if bytes.count > maximumLength {
      return "is \(bytes.count) bytes long; the limit is \(maximumLength)"
    }
    var parser = Parser(bytes: bytes)
    do {
      while !parser.atEnd { try parser.completeType() }
      return nil
    } catch {
      return error.rule
    }
  }

  /// The complete types this signature is made of, in order: `sa{sv}` gives `s` and
  /// `a{sv}`.
  public var completeTypes: [Signature] {
    var parser = Parser(bytes: Array(rawValue.utf8))
    var result: [Signature] = []
    while !parser.atEnd {
      let start = parser.index
      do { try parser.completeType() } catch { return result }
      result.append(
        Signature(unchecked: String(decoding: parser.bytes[start..<parser.index], as: UTF8.self)))
    }
    return result
  }

  /// Whether the signature is exactly one complete type, as an array element or a
  /// variant's content must be.
  public var isSingleCompleteType: Bool { completeTypes.count == 1 }

  /// The index just past the single complete type that starts at `index` of `bytes`, or
  /// `nil` when the signature is not valid there.
  ///
  /// A dict entry (`{kv}`) is a complete type only where `dictEntryAllowed` says so: as the
  /// element of an array.
  package static func completeTypeEnd(
    in bytes: [UInt8], from index: Int, dictEntryAllowed: Bool = false
  ) -> Int? {
    var parser = Parser(bytes: bytes)
    parser.index = index
    do {
      try parser.completeType(dictEntryAllowed: dictEntryAllowed)
      return parser.index
    } catch {
      return nil
    }
  }

  /// Whether `bytes` are exactly one complete type.
  package static func isSingleCompleteType(_ bytes: [UInt8]) -> Bool {
    bytes.count <= maximumLength && completeTypeEnd(in: bytes, from: 0) == bytes.count
  }

  /// Whether `bytes` are a valid signature: complete types, at most 255 bytes.
  package static func isValid(_ bytes: [UInt8]) -> Bool {
    guard bytes.count <= maximumLength else { return false }
    var parser = Parser(bytes: bytes)
    do {
      while !parser.atEnd { try parser.completeType() }
      return true
    } catch {
      return false
    }
  }

  static func isBasic(_ code: UInt8) -> Bool {
    switch code {
    case UInt8(ascii: "y"), UInt8(ascii: "b"), UInt8(ascii: "n"), UInt8(ascii: "q"),
      UInt8(ascii: "i"), UInt8(ascii: "u"), UInt8(ascii: "x"), UInt8(ascii: "t"),
      UInt8(ascii: "d"), UInt8(ascii: "s"), UInt8(ascii: "o"), UInt8(ascii: "g"),
      UInt8(ascii: "h"):
      true
    default: false
    }
  }

  struct Violation: Error { var rule: String }

  struct Parser {
    let bytes: [UInt8]
    var index = 0
    var arrayDepth = 0
    var structDepth = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { index == bytes.count }

    mutating func completeType(dictEntryAllowed: Bool = false) throws(Violation) {
      guard index < bytes.count else {
        throw Violation(rule: "ends where a complete type was expected at offset \(index)")
      }
      let code = bytes[index]
      if dictEntryAllowed && code == UInt8(ascii: "{") { return try dictEntry() }
      index += 1
      if Signature.isBasic(code) || code == UInt8(ascii: "v") { return }
      switch code {
      case UInt8(ascii: "a"):
        arrayDepth += 1
        defer { arrayDepth -= 1 }
        if arrayDepth > Signature.maximumDepth {
          throw Violation(rule: "arrays nest deeper than \(Signature.maximumDepth)")
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: "{") {
          try dictEntry()
        } else {
          try completeType()
        }
      case UInt8(ascii: "("):
        structDepth += 1
        defer { structDepth -= 1 }
        if structDepth > Signature.maximumDepth {
          throw Violation(rule: "structs nest deeper than \(Signature.maximumDepth)")
        }
        if index < bytes.count && bytes[index] == UInt8(ascii: ")") {
          throw Violation(rule: "empty struct at offset \(index - 1)")
        }
        while true {
          guard index < bytes.count else {
            throw Violation(rule: "struct opened at offset \(index - 1) is not closed")
          }
          if bytes[index] == UInt8(ascii: ")") {
            index += 1
            return
          }
          try completeType()
        }
      case UInt8(ascii: "{"):
        throw Violation(rule: "dict entry outside an array at offset \(index - 1)")
      default:
        throw Violation(
          rule: "unknown type code '\(NameGrammar.printable(code))' at offset \(index - 1)")
      }
    }

    private mutating func dictEntry() throws(Violation) {
      let start = index
      index += 1
      guard index < bytes.count, Signature.isBasic(bytes[index]) else {
        throw Violation(rule: "dict entry at offset \(start) needs a basic key type")
      }
      index += 1
      try completeType()
      guard index < bytes.count, bytes[index] == UInt8(ascii: "}") else {
        throw Violation(rule: "dict entry at offset \(start) must hold exactly two types")
      }
      index += 1
    }
  }
}
