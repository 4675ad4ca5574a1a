/// An `NSExtensionActivationRule`: a dictionary of counting keys or a predicate string.
public enum ActivationRule: Hashable, Sendable {
  /// The dictionary form.
  case dictionary(ActivationDictionary)
  /// The predicate-string form, parsed.
  case predicate(ActivationPredicate)

  /// Reads a rule from its manifest value: a dictionary, or a predicate string.
  ///
  /// - Throws: ``PredicateParseError`` for a predicate string that does not parse, and one
  ///   with code ``PredicateParseError/Code/notARule`` naming the kind found (`an integer (3)`)
  ///   for a value that is neither a dictionary nor a string.
  public init(propertyListValue value: PropertyListValue) throws(PredicateParseError) {
    switch value {
    case .dictionary(let entries):
      self = .dictionary(ActivationDictionary(entries))
    case .string(let string):
      self = .predicate(try ActivationPredicate(parsing: string))
    default:
      throw PredicateParseError(
        .notARule, offset: 0, expected: "a dictionary or a predicate string",
        found: Self.kind(of: value))
    }
  }

  /// The kind of a value that is not a rule, as error messages name it.
  private static func kind(of value: PropertyListValue) -> String {
    switch value {
    case .integer(let integer): return "an integer (\(integer))"
    case .double(let double): return "a real number (\(double))"
    case .bool(let bool): return "a Boolean (\(bool ? "true" : "false"))"
    case .date: return "a date"
    case .data(let data): return "data (\(data.count) bytes)"
    case .array(let elements): return "an array (\(elements.count) elements)"
    case .string: return "a string"
    case .dictionary: return "a dictionary"
    }
  }

  /// Whether the rule activates for a matching dictionary.
  public func evaluate(
    matchingDictionary: PropertyListValue, registry: UniformTypeRegistry = .system
  ) -> Bool {
    switch self {
    case .dictionary(let dictionary):
      return dictionary.evaluate(matchingDictionary: matchingDictionary, registry: registry)
    case .predicate(let predicate):
      return predicate.evaluate(with: matchingDictionary, registry: registry)
    }
  }

  /// Whether the rule activates for items, through ``MatchingDictionary/make(for:options:registry:)``.
  public func evaluate(
    _ items: [ExtensionItem], options: MatchingDictionary.Options = .init(),
    registry: UniformTypeRegistry = .system
  ) -> Bool {
    evaluate(
      matchingDictionary: MatchingDictionary.make(for: items, options: options, registry: registry),
      registry: registry)
  }

  /// Whether this rule is `TRUEPREDICATE`, which Apple accepts only during development.
  public var isTruePredicate: Bool { self == .predicate(.constant(true)) }
}
