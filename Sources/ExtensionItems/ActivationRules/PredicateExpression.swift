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
