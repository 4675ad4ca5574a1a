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
