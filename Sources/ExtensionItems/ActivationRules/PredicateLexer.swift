/// Splits a predicate string into tokens.
struct PredicateLexer {
  private let bytes: [UInt8]
  private var position = 0

  init(_ bytes: [UInt8]) { self.bytes = bytes }

  private static let keywordsByName: [String: PredicateToken.Keyword] = Dictionary(
    uniqueKeysWithValues: PredicateToken.Keyword.allCases.map { ($0.rawValue, $0) })

  private static let wordOperators: [String: PredicateComparison.Operator] = [
    "IN": .in, "CONTAINS": .contains, "BEGINSWITH": .beginsWith, "ENDSWITH": .endsWith,
    "BETWEEN": .between,
  ]

  /// Reads every token, ending with `.end`.
  mutating func tokenize() throws(PredicateParseError) -> [PredicateToken] {
    var tokens: [PredicateToken] = []
    while true {
      let token = try next()
      tokens.append(token)
      if token.kind == .end { return tokens }
    }
  }

  private func peek(_ ahead: Int = 0) -> UInt8? {
    position + ahead < bytes.count ? bytes[position + ahead] : nil
  }

  private static func isIdentifierStart(_ byte: UInt8) -> Bool {
    (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
      || byte >= 0x80
  }

  private static func isIdentifierPart(_ byte: UInt8) -> Bool {
    isIdentifierStart(byte) || (byte >= 0x30 && byte <= 0x39)
  }

  private static func isDigit(_ byte: UInt8?) -> Bool {
    guard let byte else { return false }
    return byte >= 0x30 && byte <= 0x39
  }

  private mutating func next() throws(PredicateParseError) -> PredicateToken {
    while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D {
      position += 1
    }
    let start = position
    guard let byte = peek() else { return PredicateToken(kind: .end, offset: start) }
    func token(_ kind: PredicateToken.Kind, length: Int) -> PredicateToken {
      position += length
      return PredicateToken(kind: kind, offset: start)
    }
    switch byte {
    case UInt8(ascii: "("): return token(.punctuation(.openParenthesis), length: 1)
    case UInt8(ascii: ")"): return token(.punctuation(.closeParenthesis), length: 1)
    case UInt8(ascii: "{"): return token(.punctuation(.openBrace), length: 1)
    case UInt8(ascii: "}"): return token(.punctuation(.closeBrace), length: 1)
    case UInt8(ascii: "["): return token(.punctuation(.openBracket), length: 1)
    case UInt8(ascii: "]"): return token(.punctuation(.closeBracket), length: 1)
    case UInt8(ascii: ","): return token(.punctuation(.comma), length: 1)
    case UInt8(ascii: "-"): return token(.punctuation(.minus), length: 1)
    case UInt8(ascii: "."):
      if Self.isDigit(peek(1)) { return try number() }
      return token(.punctuation(.dot), length: 1)
    case UInt8(ascii: "&"):
      if peek(1) == UInt8(ascii: "&") { return token(.punctuation(.and), length: 2) }
    case UInt8(ascii: "|"):
      if peek(1) == UInt8(ascii: "|") { return token(.punctuation(.or), length: 2) }
    case UInt8(ascii: "!"):
      if peek(1) == UInt8(ascii: "=") { return token(.operation(.notEqual), length: 2) }
      return token(.punctuation(.not), length: 1)
    case UInt8(ascii: "="):
      switch peek(1) {
      case UInt8(ascii: "=")?: return token(.operation(.equal), length: 2)
      case UInt8(ascii: "<")?: return token(.operation(.lessOrEqual), length: 2)
      case UInt8(ascii: ">")?: return token(.operation(.greaterOrEqual), length: 2)
      default: return token(.operation(.equal), length: 1)
      }
    case UInt8(ascii: "<"):
      switch peek(1) {
      case UInt8(ascii: "=")?: return token(.operation(.lessOrEqual), length: 2)
      case UInt8(ascii: ">")?: return token(.operation(.notEqual), length: 2)
      default: return token(.operation(.less), length: 1)
      }
    case UInt8(ascii: ">"):
      if peek(1) == UInt8(ascii: "=") { return token(.operation(.greaterOrEqual), length: 2) }
      return token(.operation(.greater), length: 1)
    case UInt8(ascii: "\""), UInt8(ascii: "'"):
      return try string(quote: byte)
    case UInt8(ascii: "$"):
      position += 1
      guard let first = peek(), Self.isIdentifierStart(first) else {
        throw PredicateParseError(
          .unexpectedToken, offset: position, expected: "a variable name after \"$\"",
          found: describe(at: position))
      }
      return PredicateToken(kind: .variable(identifier()), offset: start)
    case UInt8(ascii: "@"):
      position += 1
      guard let first = peek(), Self.isIdentifierStart(first) else {
        throw PredicateParseError(
          .unexpectedToken, offset: position, expected: "a key-path operator such as @count",
          found: describe(at: position))
      }
      let name = "@" + identifier()
      guard PredicateToken.keyPathOperators.contains(name) else {
        throw PredicateParseError(
          .unsupportedOperator, offset: start,
          expected: "a key-path operator: "
            + PredicateToken.keyPathOperators.joined(separator: ", "),
          found: "\(name), which is not implemented")
      }
      return PredicateToken(kind: .keyPathOperator(name), offset: start)
    case UInt8(ascii: "#"):
      position += 1
      guard let first = peek(), Self.isIdentifierStart(first) else {
        throw PredicateParseError(
          .unexpectedToken, offset: position, expected: "a key after \"#\"",
          found: describe(at: position))
      }
      return PredicateToken(kind: .identifier(identifier()), offset: start)
    default:
      if Self.isDigit(byte) { return try number() }
      if Self.isIdentifierStart(byte) { return word(start: start) }
    }
    throw PredicateParseError(
      .invalidCharacter, offset: start, expected: "a token", found: describe(at: start))
  }

  /// The longest token an error message quotes, in UTF-8 bytes.
  static let maximumQuotedToken = 64

  /// The token at `offset`, whole, quoted for error messages.
  ///
  /// A quoted string runs through its closing quote, anything else up to white space, a
  /// bracket or a comma, so a misspelled `UTI-CONFORMS-T0` shows as written. Tokens longer than ``maximumQuotedToken`` bytes
  /// are cut at a character boundary and say how long they are.
  func describe(at offset: Int) -> String {
    guard offset < bytes.count else { return "end of input" }
    var end = offset + 1
    let first = bytes[offset]
    if [0x20, 0x09, 0x0A, 0x0D].contains(first) { return "white space" }
    if first == UInt8(ascii: "\"") || first == UInt8(ascii: "'") {
      while end < bytes.count, bytes[end] != first {
        end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1
      }
      end = min(end + 1, bytes.count)
    } else if !Self.isDelimiter(first) {
      while end < bytes.count, !Self.isDelimiter(bytes[end]) { end += 1 }
    }
    guard end - offset > Self.maximumQuotedToken else {
      return "\"\(String(decoding: bytes[offset..<end], as: UTF8.self))\""
    }
    var cut = offset + Self.maximumQuotedToken
    while cut > offset, bytes[cut] & 0xC0 == 0x80 { cut -= 1 }
    let shown = String(decoding: bytes[offset..<cut], as: UTF8.self)
    return "\"\(shown)...\" (a token of \(end - offset) bytes)"
  }

  /// Bytes that end a token in an error message: white space, brackets, commas and quotes.
  private static func isDelimiter(_ byte: UInt8) -> Bool {
    switch byte {
    case 0x20, 0x09, 0x0A, 0x0D: return true
    default: return "(){}[],\"'".utf8.contains(byte)
    }
  }

  private mutating func identifier() -> String {
    let start = position
    while let byte = peek(), Self.isIdentifierPart(byte) { position += 1 }
    return String(decoding: bytes[start..<position], as: UTF8.self)
  }

  private mutating func word(start: Int) -> PredicateToken {
    let name = identifier()
    let upper = String(
      decoding: name.utf8.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }, as: UTF8.self)
    if upper == "UTI", peek() == UInt8(ascii: "-") {
      for (suffix, operation) in [
        ("-CONFORMS-TO", PredicateComparison.Operator.utiConformsTo), ("-EQUALS", .utiEquals),
      ] where matchesUppercased(suffix) {
        position += suffix.utf8.count
        return PredicateToken(kind: .operation(operation), offset: start)
      }
    }
    if let keyword = Self.keywordsByName[upper] {
      return PredicateToken(kind: .keyword(keyword), offset: start)
    }
    if let operation = Self.wordOperators[upper] {
      return PredicateToken(kind: .operation(operation), offset: start)
    }
    return PredicateToken(kind: .identifier(name), offset: start)
  }

  private func matchesUppercased(_ text: String) -> Bool {
    var index = position
    for expected in text.utf8 {
      guard index < bytes.count else { return false }
      var byte = bytes[index]
      if byte >= 0x61 && byte <= 0x7A { byte -= 0x20 }
      guard byte == expected else { return false }
      index += 1
    }
    if index < bytes.count, Self.isIdentifierPart(bytes[index]) { return false }
    return true
  }

  private mutating func number() throws(PredicateParseError) -> PredicateToken {
    let start = position
    var isReal = false
    while Self.isDigit(peek()) { position += 1 }
    if peek() == UInt8(ascii: "."), Self.isDigit(peek(1)) {
      isReal = true
      position += 1
      while Self.isDigit(peek()) { position += 1 }
    }
    if let e = peek(), e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
      var look = 1
      if let sign = peek(1), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { look = 2 }
      if Self.isDigit(peek(look)) {
        isReal = true
        position += look
        while Self.isDigit(peek()) { position += 1 }
      }
    }
    let text = String(decoding: bytes[start..<position], as: UTF8.self)
    if !isReal, let value = Int64(text) {
      return PredicateToken(kind: .integer(value), offset: start)
    }
    if let value = Double(text), value.isFinite {
      return PredicateToken(kind: .double(value), offset: start)
    }
    throw PredicateParseError(
      .invalidNumber, offset: start, expected: "a number that fits a double", found: "\(text)")
  }

  private mutating func string(quote: UInt8) throws(PredicateParseError) -> PredicateToken {
    let start = position
    position += 1
    var output: [UInt8] = []
    while let byte = peek() {
      position += 1
      if byte == quote {
        return PredicateToken(kind: .string(String(decoding: output, as: UTF8.self)), offset: start)
      }
      guard byte == UInt8(ascii: "\\") else {
        output.append(byte)
        continue
      }
      let escapeOffset = position - 1
      guard let escaped = peek() else { break }
      position += 1
      switch escaped {
      case UInt8(ascii: "\\"), UInt8(ascii: "\""), UInt8(ascii: "'"): output.append(escaped)
      case UInt8(ascii: "n"): output.append(0x0A)
      case UInt8(ascii: "r"): output.append(0x0D)
      case UInt8(ascii: "t"): output.append(0x09)
      case UInt8(ascii: "0"): output.append(0x00)
      case UInt8(ascii: "u"):
        var scalar: UInt32 = 0
        for _ in 0..<4 {
          guard let digit = peek(), let value = Self.hexValue(digit) else {
            throw PredicateParseError(
              .invalidEscape, offset: escapeOffset, expected: "four hex digits after \\u",
              found: describe(at: position))
          }
          scalar = scalar << 4 | UInt32(value)
          position += 1
        }
        guard let unicode = Unicode.Scalar(scalar) else {
          throw PredicateParseError(
            .invalidEscape, offset: escapeOffset, expected: "a Unicode scalar value",
            found: "\\u surrogate")
        }
        output.append(contentsOf: Array(String(Character(unicode)).utf8))
      default:
        throw PredicateParseError(
          .invalidEscape, offset: escapeOffset,
          expected: "an escape: \\\\ \\\" \\' \\n \\r \\t \\0 \\uXXXX",
          found: describe(at: escapeOffset))
      }
    }
    throw PredicateParseError(
      .unterminatedString, offset: start,
      expected: "a closing \(quote == UInt8(ascii: "\"") ? "\"" : "'")", found: "end of input")
  }

  private static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: return byte - 0x30
    case 0x41...0x46: return byte - 0x41 + 10
    case 0x61...0x66: return byte - 0x61 + 10
    default: return nil
    }
  }
}
