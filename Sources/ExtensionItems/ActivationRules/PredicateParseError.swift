/// Why a predicate string could not be parsed, and where.
public struct PredicateParseError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The error's stable code.
  public var code: Code
  /// The UTF-8 byte offset in the predicate string where the problem was found.
  public var offset: Int
  /// What the parser expected at ``offset``, for example `a comparison operator`.
  public var expected: String
  /// What it found instead, for example `"AND"` or `end of input`.
  public var found: String

  /// Creates an error.
  public init(_ code: Code, offset: Int, expected: String, found: String) {
    self.code = code
    self.offset = offset
    self.expected = expected
    self.found = found
  }

  /// "expected <expected> at offset <offset>, found <found>"; without the offset for
  /// ``Code/notARule``, where there is no text to point into.
  public var description: String {
    code == .notARule
      ? "expected \(expected), found \(found)"
      : "expected \(expected) at offset \(offset), found \(found)"
  }

  /// The kinds of parse error.
  public struct Code: RawRepresentable, Hashable, Sendable {
    /// The raw value.
    public var rawValue: Int
    /// Creates a code from its raw value.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// A token that does not fit the grammar at this point.
    public static let unexpectedToken = Code(rawValue: 1)
    /// The input ended in the middle of a predicate.
    public static let unexpectedEnd = Code(rawValue: 2)
    /// A quoted string has no closing quote.
    public static let unterminatedString = Code(rawValue: 3)
    /// A backslash escape in a string is not one of `\\ \" \' \n \r \t \0 \uXXXX`.
    public static let invalidEscape = Code(rawValue: 4)
    /// A number does not fit a 64-bit integer or a double.
    public static let invalidNumber = Code(rawValue: 5)
    /// A character that starts no token.
    public static let invalidCharacter = Code(rawValue: 6)
    /// Parentheses, subqueries or aggregates nest deeper than the parser allows.
    public static let nestingTooDeep = Code(rawValue: 7)
    /// The input is longer than the parser accepts.
    public static let inputTooLong = Code(rawValue: 8)
    /// A key-path operator (`@distinctUnionOfArrays`) that the evaluator does not implement.
    public static let unsupportedOperator = Code(rawValue: 9)
    /// A rule that is neither a dictionary nor a predicate string; ``found`` names its kind.
    public static let notARule = Code(rawValue: 10)
  }
}
