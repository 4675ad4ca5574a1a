public import Foundation

/// A property-list value: what an item's `userInfo`, an `Info.plist` manifest and shared
/// defaults hold.
///
/// Property lists are the value language of `NSExtensionItem.userInfo`, of `Info.plist`
/// manifests and of `UserDefaults`. The cases mirror the property-list object types
/// (`NSString`, `NSNumber` as integer, real or Boolean, `NSDate`, `NSData`, `NSArray`,
/// `NSDictionary`); dictionary keys are always strings.
public enum PropertyListValue: Hashable, Sendable {
  /// A string (`NSString`).
  case string(String)
  /// A signed 64-bit integer (`NSNumber` holding an integer).
  case integer(Int64)
  /// A double-precision real (`NSNumber` holding a real).
  case double(Double)
  /// A Boolean (`NSNumber` holding a Boolean, `<true/>` / `<false/>` in XML).
  case bool(Bool)
  /// A point in time (`NSDate`).
  case date(Date)
  /// Raw bytes (`NSData`).
  case data(Data)
  /// An ordered list of values (`NSArray`).
  case array([PropertyListValue])
  /// String-keyed values (`NSDictionary`).
  case dictionary([String: PropertyListValue])
}

extension PropertyListValue {
  /// The string, if this value is a string.
  public var stringValue: String? {
    if case .string(let value) = self { return value }
    return nil
  }

  /// The value read as an integer, the way `-[NSNumber intValue]` reads it.
  ///
  /// Integers are returned as is, Booleans as 0 or 1 and reals truncated toward zero
  /// (`nil` when out of range). Other kinds return `nil`.
  public var integerValue: Int64? {
    switch self {
    case .integer(let value): return value
    case .bool(let value): return value ? 1 : 0
    case .double(let value): return Int64(exactly: value.rounded(.towardZero))
    default: return nil
    }
  }

  /// The value read as a Boolean: Booleans as is, numbers as "not zero".
  public var boolValue: Bool? {
    switch self {
    case .bool(let value): return value
    case .integer(let value): return value != 0
    case .double(let value): return value != 0
    default: return nil
    }
  }

  /// The elements, if this value is an array.
  public var arrayValue: [PropertyListValue]? {
    if case .array(let value) = self { return value }
    return nil
  }

  /// The entries, if this value is a dictionary.
  public var dictionaryValue: [String: PropertyListValue]? {
    if case .dictionary(let value) = self { return value }
    return nil
  }

  /// The bytes, if this value is data.
  public var dataValue: Data? {
    if case .data(let value) = self { return value }
    return nil
  }

  /// The number of bytes the value's contents take: string and data bytes, 8 per number or
  /// date, 1 per Boolean, plus the keys of dictionaries.
  public var contentSize: Int {
    switch self {
    case .string(let string): return string.utf8.count
    case .integer, .double, .date: return 8
    case .bool: return 1
    case .data(let data): return data.count
    case .array(let values): return values.reduce(0) { $0 + $1.contentSize }
    case .dictionary(let values):
      return values.reduce(0) { $0 + $1.key.utf8.count + $1.value.contentSize }
    }
  }

  /// How deeply containers nest inside this value: 0 for a scalar, 1 for a flat array or
  /// dictionary of scalars, and so on.
  public var nestingDepth: Int {
    switch self {
    case .array(let elements):
      return 1 + (elements.lazy.map(\.nestingDepth).max() ?? 0)
    case .dictionary(let entries):
      return 1 + (entries.values.lazy.map(\.nestingDepth).max() ?? 0)
    default:
      return 0
    }
  }
}

extension PropertyListValue: ExpressibleByStringLiteral {
  /// Creates a string value from a literal.
  public init(stringLiteral value: String) { self = .string(value) }
}

extension PropertyListValue: ExpressibleByIntegerLiteral {
  /// Creates an integer value from a literal.
  public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension PropertyListValue: ExpressibleByFloatLiteral {
  /// Creates a real value from a literal.
  public init(floatLiteral value: Double) { self = .double(value) }
}

extension PropertyListValue: ExpressibleByBooleanLiteral {
  /// Creates a Boolean value from a literal.
  public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension PropertyListValue: ExpressibleByArrayLiteral {
  /// Creates an array value from a literal.
  public init(arrayLiteral elements: PropertyListValue...) { self = .array(elements) }
}

extension PropertyListValue: ExpressibleByDictionaryLiteral {
  /// Creates a dictionary value from a literal; a repeated key keeps its last value.
  public init(dictionaryLiteral elements: (String, PropertyListValue)...) {
    self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
  }
}
