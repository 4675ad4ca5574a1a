/// A parsed predicate in the subset of Apple's predicate format that activation rules use.
///
/// Parse one with ``init(parsing:)`` and evaluate it against a matching dictionary with
/// ``evaluate(with:variables:registry:)``. The ``description`` is a canonical predicate
/// string that parses back to an equal value.
public indirect enum ActivationPredicate: Hashable, Sendable {
  /// `TRUEPREDICATE` or `FALSEPREDICATE`.
  case constant(Bool)
  /// `NOT p`.
  case not(ActivationPredicate)
  /// `p AND q AND ...`.
  case and([ActivationPredicate])
  /// `p OR q OR ...`.
  case or([ActivationPredicate])
  /// `[ANY | ALL | NONE] lhs op rhs`.
  case comparison(PredicateComparison)
}

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

/// A value-producing part of a predicate.
public indirect enum PredicateExpression: Hashable, Sendable {
  /// A literal: string, number, Boolean, or `nil` for `NULL`.
  case constant(PropertyListValue?)
  /// The object the predicate is evaluated against (`SELF`).
  case evaluatedObject
  /// A `$variable`, bound by `SUBQUERY` or by the caller.
  case variable(String)
  /// Key-path components applied to a base: `base.key.@count`.
  case keyPath(PredicateExpression, [String])
  /// `SUBQUERY(collection, $variable, predicate)`: the elements for which the predicate holds.
  case subquery(PredicateExpression, variable: String, ActivationPredicate)
  /// `{ a, b, ... }`.
  case aggregate([PredicateExpression])
}
