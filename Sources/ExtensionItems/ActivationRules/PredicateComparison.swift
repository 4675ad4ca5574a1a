/// One comparison: an optional collection modifier, two expressions and an operator.
public struct PredicateComparison: Hashable, Sendable {
  /// How the left-hand side is read.
  public var modifier: Modifier
  /// The left-hand side.
  public var left: PredicateExpression
  /// The operator.
  public var operation: Operator
  /// Case and diacritic options for string operators (`[c]`, `[d]`, `[cd]`).
  public var options: Options
  /// The right-hand side.
  public var right: PredicateExpression

  /// Creates a comparison.
  public init(
    modifier: Modifier = .direct, _ left: PredicateExpression, _ operation: Operator,
    _ right: PredicateExpression, options: Options = []
  ) {
    self.modifier = modifier
    self.left = left
    self.operation = operation
    self.options = options
    self.right = right
  }

  /// A collection modifier: whether the comparison applies to the left-hand side or to
  /// each of its elements.
  public enum Modifier: String, Hashable, Sendable {
    /// Compare the left-hand side itself.
    case direct = ""
    /// True when some element satisfies the comparison (`ANY`, also spelled `SOME`).
    case any = "ANY"
    /// True when every element satisfies it (`ALL`).
    case all = "ALL"
    /// True when no element satisfies it (`NONE`).
    case none = "NONE"
  }

  /// A comparison operator.
  public enum Operator: String, Hashable, Sendable, CaseIterable {
    /// `==` (also `=`).
    case equal = "=="
    /// `!=` (also `<>`).
    case notEqual = "!="
    /// `<`.
    case less = "<"
    /// `<=` (also `=<`).
    case lessOrEqual = "<="
    /// `>`.
    case greater = ">"
    /// `>=` (also `=>`).
    case greaterOrEqual = ">="
    /// `IN`: membership in a collection, or a substring of a string.
    case `in` = "IN"
    /// `CONTAINS`: the reverse of `IN`.
    case contains = "CONTAINS"
    /// `BEGINSWITH`.
    case beginsWith = "BEGINSWITH"
    /// `ENDSWITH`.
    case endsWith = "ENDSWITH"
    /// `BETWEEN { lower, upper }`, bounds included.
    case between = "BETWEEN"
    /// `UTI-CONFORMS-TO`: `UTTypeConformsTo(lhs, rhs)`.
    case utiConformsTo = "UTI-CONFORMS-TO"
    /// `UTI-EQUALS`: `UTTypeEqual(lhs, rhs)`.
    case utiEquals = "UTI-EQUALS"
  }

  /// String comparison options.
  public struct Options: OptionSet, Hashable, Sendable {
    /// The raw bits.
    public var rawValue: UInt8
    /// Creates options from raw bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// `[c]`: ignore case.
    public static let caseInsensitive = Options(rawValue: 1)
    /// `[d]`: ignore diacritics.
    public static let diacriticInsensitive = Options(rawValue: 2)
  }
}
