import Foundation

extension ActivationPredicate: CustomStringConvertible {
  /// The predicate as a canonical predicate string, which parses back to an equal value.
  public var description: String {
    switch self {
    case .constant(let value):
      return value ? "TRUEPREDICATE" : "FALSEPREDICATE"
    case .not(let inner):
      return "NOT " + inner.parenthesized(if: inner.isJunction)
    case .and(let terms):
      return terms.map { $0.parenthesized(if: $0.isJunction) }.joined(separator: " AND ")
    case .or(let terms):
      return terms.map { $0.parenthesized(if: $0.isDisjunction) }.joined(separator: " OR ")
    case .comparison(let comparison):
      return comparison.description
    }
  }

  /// Parentheses go only where the structure needs them, so printing never nests deeper
  /// than the text that was parsed.
  private func parenthesized(if needed: Bool) -> String {
    needed ? "(\(description))" : description
  }

  private var isJunction: Bool {
    switch self {
    case .and, .or: return true
    default: return false
    }
  }

  private var isDisjunction: Bool {
    if case .or = self { return true }
    return false
  }
}

extension PredicateComparison: CustomStringConvertible {
  /// The comparison as predicate-string text.
  public var description: String {
    var text = modifier == .direct ? "" : modifier.rawValue + " "
    text += "\(left) \(operation.rawValue)"
    if !options.isEmpty {
      text += "["
      if options.contains(.caseInsensitive) { text += "c" }
      if options.contains(.diacriticInsensitive) { text += "d" }
      text += "]"
    }
    return text + " \(right)"
  }
}

extension PredicateExpression: CustomStringConvertible {
  /// The expression as predicate-string text.
  public var description: String {
    switch self {
    case .constant(let value):
      guard let value else { return "NULL" }
      return Self.literal(value)
    case .evaluatedObject:
      return "SELF"
    case .variable(let name):
      return "$" + name
    case .keyPath(let base, let path):
      let components = path.map(Self.keyText)
      if case .evaluatedObject = base, !components.isEmpty {
        return components.joined(separator: ".")
      }
      return ([base.description] + components).joined(separator: ".")
    case .subquery(let collection, let variable, let predicate):
      return "SUBQUERY(\(collection), $\(variable), \(predicate))"
    case .aggregate(let elements):
      return "{" + elements.map(\.description).joined(separator: ", ") + "}"
    }
  }

  private static func keyText(_ key: String) -> String {
    if key.hasPrefix("@") { return key }
    let upper = String(
      decoding: key.utf8.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }, as: UTF8.self)
    let reserved: Set<String> = [
      "AND", "OR", "NOT", "ANY", "SOME", "ALL", "NONE", "TRUEPREDICATE", "FALSEPREDICATE",
      "SUBQUERY", "TRUE", "YES", "FALSE", "NO", "NULL", "NIL", "SELF", "IN", "CONTAINS",
      "BEGINSWITH", "ENDSWITH", "BETWEEN", "UTI",
    ]
    return reserved.contains(upper) ? "#" + key : key
  }

  private static func literal(_ value: PropertyListValue) -> String {
    switch value {
    case .string(let string): return quoted(string)
    case .integer(let integer): return String(integer)
    case .double(let double): return double.description
    case .bool(let bool): return bool ? "TRUE" : "FALSE"
    case .array(let elements): return "{" + elements.map(literal).joined(separator: ", ") + "}"
    case .date(let date): return String(date.timeIntervalSinceReferenceDate)
    case .data(let data): return quoted(String(decoding: data, as: UTF8.self))
    case .dictionary: return "NULL"
    }
  }

  private static func quoted(_ string: String) -> String {
    var result = "\""
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\"": result += "\\\""
      case "\\": result += "\\\\"
      case "\n": result += "\\n"
      case "\r": result += "\\r"
      case "\t": result += "\\t"
      case "\0": result += "\\0"
      default:
        if scalar.value < 0x20 || scalar.value == 0x7F {
          let hex = String(scalar.value, radix: 16)
          result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        } else {
          result.unicodeScalars.append(scalar)
        }
      }
    }
    return result + "\""
  }
}
