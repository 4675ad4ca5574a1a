import Foundation

extension ActivationPredicate {
  /// Evaluates the predicate against an object, usually a matching dictionary.
  ///
  /// Key paths follow key-value coding: a key reads a dictionary entry, a key applied to an
  /// array reads it from every element, and `@count` counts an array. Anything missing is
  /// `NULL`, as is an unbound `$variable`. `ANY`, `ALL` and `NONE` look through nested
  /// arrays, so `ANY extensionItems.attachments.registeredTypeIdentifiers` sees every type.
  /// Comparisons between values of different kinds are false (except `!=`, which is true). `UTI-CONFORMS-TO` and `UTI-EQUALS` use `registry`.
  ///
  /// - Parameters:
  ///   - object: The evaluated object (`SELF`).
  ///   - variables: Values for `$variables` not bound by a `SUBQUERY`.
  ///   - registry: The type graph for `UTI-CONFORMS-TO`.
  public func evaluate(
    with object: PropertyListValue,
    variables: [String: PropertyListValue] = [:],
    registry: UniformTypeRegistry = .system
  ) -> Bool {
    var evaluator = PredicateEvaluator(registry: registry, variables: variables)
    return evaluator.truth(self, object)
  }
}

/// Evaluates predicates; variables live in one dictionary that subqueries update and restore.
struct PredicateEvaluator {
  let registry: UniformTypeRegistry
  var variables: [String: PropertyListValue]

  mutating func truth(_ predicate: ActivationPredicate, _ object: PropertyListValue) -> Bool {
    switch predicate {
    case .constant(let value):
      return value
    case .not(let inner):
      return !truth(inner, object)
    case .and(let terms):
      for term in terms where !truth(term, object) { return false }
      return true
    case .or(let terms):
      for term in terms where truth(term, object) { return true }
      return false
    case .comparison(let comparison):
      return compare(comparison, object)
    }
  }

  private mutating func compare(_ comparison: PredicateComparison, _ object: PropertyListValue)
    -> Bool
  {
    let left = value(comparison.left, object)
    let right = value(comparison.right, object)
    let operation = comparison.operation
    let options = comparison.options
    switch comparison.modifier {
    case .direct:
      return Self.compare(left, operation, right, options, registry)
    case .any, .all, .none:
      var elements: [PropertyListValue] = []
      Self.flatten(left, into: &elements)
      switch comparison.modifier {
      case .any:
        return elements.contains { Self.compare($0, operation, right, options, registry) }
      case .all:
        return elements.allSatisfy { Self.compare($0, operation, right, options, registry) }
      default:
        return !elements.contains { Self.compare($0, operation, right, options, registry) }
      }
    }
  }

  mutating func value(_ expression: PredicateExpression, _ object: PropertyListValue)
    -> PropertyListValue?
  {
    switch expression {
    case .constant(let constant):
      return constant
    case .evaluatedObject:
      return object
    case .variable(let name):
      return variables[name]
    case .keyPath(let base, let path):
      return Self.apply(path[...], to: value(base, object))
    case .aggregate(let elements):
      var values: [PropertyListValue] = []
      values.reserveCapacity(elements.count)
      for element in elements { values.append(value(element, object) ?? .array([])) }
      return .array(values)
    case .subquery(let collectionExpression, let variable, let predicate):
      let elements: [PropertyListValue]
      switch value(collectionExpression, object) {
      case .array(let array)?: elements = array
      case .dictionary(let entries)?: elements = Array(entries.values)
      case let scalar?: elements = [scalar]
      case nil: elements = []
      }
      let saved = variables[variable]
      defer { variables[variable] = saved }
      var matches: [PropertyListValue] = []
      for element in elements {
        variables[variable] = element
        if truth(predicate, object) { matches.append(element) }
      }
      return .array(matches)
    }
  }

  /// The leaves of nested arrays, so `ANY a.b.c` reaches through several to-many steps.
  private static func flatten(_ value: PropertyListValue?, into elements: inout [PropertyListValue])
  {
    switch value {
    case .array(let array)?:
      for element in array {
        if case .array = element {
          flatten(element, into: &elements)
        } else {
          elements.append(element)
        }
      }
    case .dictionary(let entries)?: elements.append(contentsOf: entries.values)
    case let scalar?: elements.append(scalar)
    case nil: break
    }
  }

  /// Applies key-path components in turn.
  ///
  /// As in key-value coding, an aggregate operator
  /// takes the rest of the path as its argument: `items.@sum.size` sums every item's `size`,
  /// and `@count` ignores what follows it.
  private static func apply(_ path: ArraySlice<String>, to value: PropertyListValue?)
    -> PropertyListValue?
  {
    var current = value
    for (index, key) in zip(path.indices, path) {
      let rest = path[(index + 1)...]
      let isAggregate = ["@sum", "@avg", "@min", "@max"].contains(key)
      if key == "@count" { return apply(key, to: current) }
      if isAggregate, !rest.isEmpty {
        guard case .array(let elements)? = current else { return nil }
        return apply(key, to: .array(elements.map { apply(rest, to: $0) ?? .array([]) }))
      }
      current = apply(key, to: current)
    }
    return current
  }

  private static func apply(_ key: String, to value: PropertyListValue?) -> PropertyListValue? {
    guard let value else { return nil }
    switch key {
    case "@count":
      switch value {
      case .array(let elements): return .integer(Int64(elements.count))
      case .dictionary(let entries): return .integer(Int64(entries.count))
      default: return nil
      }
    case "@sum", "@avg", "@min", "@max":
      guard case .array(let elements) = value else { return nil }
      let numbers = elements.compactMap(number)
      switch key {
      case "@sum": return .double(numbers.reduce(0, +))
      case "@avg":
        return numbers.isEmpty ? nil : .double(numbers.reduce(0, +) / Double(numbers.count))
      case "@min": return numbers.min().map(PropertyListValue.double)
      default: return numbers.max().map(PropertyListValue.double)
      }
    case "self":
      return value
    default:
      switch value {
      case .dictionary(let entries): return entries[key]
      case .array(let elements): return .array(elements.map { apply(key, to: $0) ?? .array([]) })
      default: return nil
      }
    }
  }

  static func number(_ value: PropertyListValue) -> Double? {
    switch value {
    case .integer(let integer): return Double(integer)
    case .double(let double): return double
    case .bool(let bool): return bool ? 1 : 0
    case .date(let date): return date.timeIntervalSinceReferenceDate
    default: return nil
    }
  }

  private static func equal(
    _ left: PropertyListValue?, _ right: PropertyListValue?, _ options: PredicateComparison.Options
  ) -> Bool {
    switch (left, right) {
    case (nil, nil): return true
    case (nil, _), (_, nil): return false
    case (.string(let a)?, .string(let b)?): return fold(a, options) == fold(b, options)
    case (let a?, let b?):
      if let x = number(a), let y = number(b) { return x == y }
      return a == b
    }
  }

  private static func order(
    _ left: PropertyListValue?, _ right: PropertyListValue?, _ options: PredicateComparison.Options
  ) -> Int? {
    guard let left, let right else { return nil }
    if case .string(let a) = left, case .string(let b) = right {
      let (x, y) = (fold(a, options), fold(b, options))
      return x < y ? -1 : (x == y ? 0 : 1)
    }
    guard let x = number(left), let y = number(right), !x.isNaN, !y.isNaN else { return nil }
    return x < y ? -1 : (x == y ? 0 : 1)
  }

  private static func fold(_ string: String, _ options: PredicateComparison.Options) -> String {
    guard !options.isEmpty else { return string }
    var folding: String.CompareOptions = []
    if options.contains(.caseInsensitive) { folding.insert(.caseInsensitive) }
    if options.contains(.diacriticInsensitive) { folding.insert(.diacriticInsensitive) }
    return string.folding(options: folding, locale: nil)
  }

  static func compare(
    _ left: PropertyListValue?, _ operation: PredicateComparison.Operator,
    _ right: PropertyListValue?, _ options: PredicateComparison.Options,
    _ registry: UniformTypeRegistry
  ) -> Bool {
    switch operation {
    case .equal: return equal(left, right, options)
    case .notEqual: return !equal(left, right, options)
    case .less: return order(left, right, options).map { $0 < 0 } ?? false
    case .lessOrEqual: return order(left, right, options).map { $0 <= 0 } ?? false
    case .greater: return order(left, right, options).map { $0 > 0 } ?? false
    case .greaterOrEqual: return order(left, right, options).map { $0 >= 0 } ?? false
    case .in: return contains(right, left, options)
    case .contains: return contains(left, right, options)
    case .beginsWith, .endsWith:
      guard case .string(let a)? = left, case .string(let b)? = right else { return false }
      let (x, y) = (fold(a, options), fold(b, options))
      return operation == .beginsWith ? x.hasPrefix(y) : x.hasSuffix(y)
    case .between:
      guard case .array(let bounds)? = right, bounds.count == 2,
        let low = order(left, bounds[0], options), let high = order(left, bounds[1], options)
      else { return false }
      return low >= 0 && high <= 0
    case .utiConformsTo, .utiEquals:
      guard case .string(let a)? = left else { return false }
      let candidates: [String]
      switch right {
      case .string(let b)?: candidates = [b]
      case .array(let elements)?: candidates = elements.compactMap(\.stringValue)
      default: return false
      }
      let type = UniformType(a)
      return candidates.contains { candidate in
        operation == .utiEquals
          ? type == UniformType(candidate) : registry.conforms(type, to: UniformType(candidate))
      }
    }
  }

  private static func contains(
    _ container: PropertyListValue?, _ element: PropertyListValue?,
    _ options: PredicateComparison.Options
  ) -> Bool {
    switch container {
    case .array(let elements)?:
      return elements.contains { equal($0, element, options) }
    case .dictionary(let entries)?:
      return entries.values.contains { equal($0, element, options) }
    case .string(let string)?:
      guard case .string(let needle)? = element else { return false }
      return fold(string, options).contains(fold(needle, options))
    default:
      return false
    }
  }
}
