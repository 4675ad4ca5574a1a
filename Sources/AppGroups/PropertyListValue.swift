public import Foundation

/// A property-list value, the only kind of value shared defaults store.
///
/// The literal conformances let you write `try defaults.set(["a", 1, true], forKey: "k")`.
public enum PropertyListValue: Sendable, Hashable {
  /// A string.
  case string(String)
  /// A signed integer.
  case integer(Int)
  /// A floating-point number.
  case double(Double)
  /// A Boolean.
  case bool(Bool)
  /// Bytes.
  case data(Data)
  /// A point in time.
  case date(Date)
  /// An ordered list of values.
  case array([PropertyListValue])
  /// A dictionary with string keys.
  case dictionary([String: PropertyListValue])

  /// The number of bytes the value's contents take: string and data bytes, 8 per number or date, 1
  /// per Boolean, plus the keys of dictionaries.
  ///
  /// The per-value limit of ``SharedDefaults`` is checked against this figure.
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
}

extension PropertyListValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
  ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral,
  ExpressibleByDictionaryLiteral
{
  /// Creates a string value.
  public init(stringLiteral value: String) { self = .string(value) }
  /// Creates an integer value.
  public init(integerLiteral value: Int) { self = .integer(value) }
  /// Creates a floating-point value.
  public init(floatLiteral value: Double) { self = .double(value) }
  /// Creates a Boolean value.
  public init(booleanLiteral value: Bool) { self = .bool(value) }
  /// Creates an array value.
  public init(arrayLiteral elements: PropertyListValue...) { self = .array(elements) }
  /// Creates a dictionary value; a repeated key keeps its last value.
  public init(dictionaryLiteral elements: (String, PropertyListValue)...) {
    self = .dictionary(Dictionary(elements, uniquingKeysWith: { $1 }))
  }
}
