extension ActivationPredicate {
  /// The longest predicate string the parser accepts, in UTF-8 bytes.
  public static let maximumInputLength = 65_536
  /// How deeply parentheses, `NOT`, subqueries and aggregates may nest.
  public static let maximumNestingDepth = 64

  /// Parses a predicate string such as an `NSExtensionActivationRule`.
  ///
  /// Keywords are case-insensitive. The grammar, operator spellings and what each operator
  /// means are listed in `Protocol/activation-rules.md`.
  ///
  /// - Throws: ``PredicateParseError`` with the byte offset and what was expected there.
  public init(parsing string: String) throws(PredicateParseError) {
    let bytes = Array(string.utf8)
    guard bytes.count <= Self.maximumInputLength else {
      throw PredicateParseError(
        .inputTooLong, offset: Self.maximumInputLength,
        expected: "at most \(Self.maximumInputLength) bytes", found: "\(bytes.count) bytes")
    }
    var lexer = PredicateLexer(bytes)
    var parser = PredicateParser(tokens: try lexer.tokenize(), lexer: lexer)
    self = try parser.parseWhole()
  }
}

/// A recursive-descent parser over the lexer's tokens.
struct PredicateParser {
  private let tokens: [PredicateToken]
  private let lexer: PredicateLexer
  private var index = 0
  private var depth = 0

  init(tokens: [PredicateToken], lexer: PredicateLexer) {
    self.tokens = tokens
    self.lexer = lexer
  }

  private var current: PredicateToken { tokens[index] }

  private mutating func advance() { if index < tokens.count - 1 { index += 1 } }

  private func failure(_ expected: String) -> PredicateParseError {
    let token = current
    if token.kind == .end {
      return PredicateParseError(
        .unexpectedEnd, offset: token.offset, expected: expected, found: "end of input")
    }
    return PredicateParseError(
      .unexpectedToken, offset: token.offset, expected: expected,
      found: lexer.describe(at: token.offset))
  }

  private mutating func enter() throws(PredicateParseError) {
    depth += 1
    guard depth <= ActivationPredicate.maximumNestingDepth else {
      throw PredicateParseError(
        .nestingTooDeep, offset: current.offset,
        expected: "at most \(ActivationPredicate.maximumNestingDepth) levels of nesting",
        found: "deeper nesting")
    }
  }

  private mutating func expect(_ punctuation: PredicateToken.Punctuation, _ what: String)
    throws(PredicateParseError)
  {
    guard current.kind == .punctuation(punctuation) else { throw failure(what) }
    advance()
  }

  mutating func parseWhole() throws(PredicateParseError) -> ActivationPredicate {
    let predicate = try parsePredicate()
    guard current.kind == .end else { throw failure("AND, OR or the end of the predicate") }
    return predicate
  }

  private mutating func parsePredicate() throws(PredicateParseError) -> ActivationPredicate {
    try enter()
    defer { depth -= 1 }
    var terms = [try parseConjunction()]
    while current.kind == .keyword(.or) || current.kind == .punctuation(.or) {
      advance()
      terms.append(try parseConjunction())
    }
    return terms.count == 1 ? terms[0] : .or(terms)
  }

  private mutating func parseConjunction() throws(PredicateParseError) -> ActivationPredicate {
    var terms = [try parseNegation()]
    while current.kind == .keyword(.and) || current.kind == .punctuation(.and) {
      advance()
      terms.append(try parseNegation())
    }
    return terms.count == 1 ? terms[0] : .and(terms)
  }

  private mutating func parseNegation() throws(PredicateParseError) -> ActivationPredicate {
    guard current.kind == .keyword(.not) || current.kind == .punctuation(.not) else {
      return try parsePrimary()
    }
    advance()
    try enter()
    defer { depth -= 1 }
    return .not(try parseNegation())
  }

  private mutating func parsePrimary() throws(PredicateParseError) -> ActivationPredicate {
    switch current.kind {
    case .punctuation(.openParenthesis):
      advance()
      let inner = try parsePredicate()
      try expect(.closeParenthesis, "\")\"")
      return inner
    case .keyword(.truePredicate):
      advance()
      return .constant(true)
    case .keyword(.falsePredicate):
      advance()
      return .constant(false)
    default:
      return .comparison(try parseComparison())
    }
  }

  private mutating func parseComparison() throws(PredicateParseError) -> PredicateComparison {
    var modifier = PredicateComparison.Modifier.direct
    switch current.kind {
    case .keyword(.any), .keyword(.some): modifier = .any
    case .keyword(.all): modifier = .all
    case .keyword(.none): modifier = .none
    default: break
    }
    if modifier != .direct { advance() }
    let left = try parseExpression()
    guard case .operation(let operation) = current.kind else {
      throw failure("a comparison operator such as ==, IN or UTI-CONFORMS-TO")
    }
    advance()
    let options = try parseOptions()
    let rightOffset = current.offset
    let right = try parseExpression()
    if operation == .between {
      guard case .aggregate(let bounds) = right, bounds.count == 2 else {
        throw PredicateParseError(
          .unexpectedToken, offset: rightOffset,
          expected: "BETWEEN followed by { lower, upper }", found: "another expression")
      }
    }
    return PredicateComparison(modifier: modifier, left, operation, right, options: options)
  }

  private mutating func parseOptions() throws(PredicateParseError) -> PredicateComparison.Options {
    guard current.kind == .punctuation(.openBracket) else { return [] }
    advance()
    guard case .identifier(let letters) = current.kind else {
      throw failure("comparison options c, d or cd")
    }
    var options: PredicateComparison.Options = []
    for letter in letters.utf8 {
      switch letter {
      case UInt8(ascii: "c"), UInt8(ascii: "C"): options.insert(.caseInsensitive)
      case UInt8(ascii: "d"), UInt8(ascii: "D"): options.insert(.diacriticInsensitive)
      default: throw failure("comparison options c, d or cd")
      }
    }
    advance()
    try expect(.closeBracket, "\"]\" after comparison options")
    return options
  }

  private mutating func parseExpression() throws(PredicateParseError) -> PredicateExpression {
    try enter()
    defer { depth -= 1 }
    var base: PredicateExpression
    var path: [String] = []
    let token = current
    switch token.kind {
    case .string(let value):
      advance()
      return .constant(.string(value))
    case .integer(let value):
      advance()
      return .constant(.integer(value))
    case .double(let value):
      advance()
      return .constant(.double(value))
    case .punctuation(.minus):
      advance()
      switch current.kind {
      case .integer(let value):
        advance()
        return .constant(value == Int64.min ? .double(-Double(value)) : .integer(-value))
      case .double(let value):
        advance()
        return .constant(.double(-value))
      default:
        throw failure("a number after \"-\"")
      }
    case .keyword(.true), .keyword(.yes):
      advance()
      return .constant(.bool(true))
    case .keyword(.false), .keyword(.no):
      advance()
      return .constant(.bool(false))
    case .keyword(.null), .keyword(.nil):
      advance()
      return .constant(nil)
    case .punctuation(.openBrace):
      advance()
      var elements: [PredicateExpression] = []
      if current.kind != .punctuation(.closeBrace) {
        elements.append(try parseExpression())
        while current.kind == .punctuation(.comma) {
          advance()
          elements.append(try parseExpression())
        }
      }
      try expect(.closeBrace, "\",\" or \"}\"")
      return .aggregate(elements)
    case .keyword(.self):
      advance()
      base = .evaluatedObject
    case .variable(let name):
      advance()
      base = .variable(name)
    case .identifier(let name):
      advance()
      base = .evaluatedObject
      path.append(name)
    case .keyPathOperator(let name):
      advance()
      base = .evaluatedObject
      path.append(name)
    case .keyword(.subquery):
      advance()
      try expect(.openParenthesis, "\"(\" after SUBQUERY")
      let collection = try parseExpression()
      try expect(.comma, "\",\" after the SUBQUERY collection")
      guard case .variable(let variable) = current.kind else {
        throw failure("a $variable as the second SUBQUERY argument")
      }
      advance()
      try expect(.comma, "\",\" after the SUBQUERY variable")
      let predicate = try parsePredicate()
      try expect(.closeParenthesis, "\")\" closing SUBQUERY")
      base = .subquery(collection, variable: variable, predicate)
    default:
      throw failure("an expression: a key path, $variable, string, number or SUBQUERY")
    }
    while current.kind == .punctuation(.dot) {
      advance()
      switch current.kind {
      case .identifier(let name), .keyPathOperator(let name):
        path.append(name)
        advance()
      case .keyword(let keyword) where keyword == .self:
        advance()
      default:
        throw failure("a key or @count after \".\"")
      }
    }
    return path.isEmpty ? base : .keyPath(base, path)
  }
}
