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

extension PropertyListValue {
  /// The value as a Foundation property-list object for `PropertyListSerialization`.
  var foundationObject: Any {
    switch self {
    case .string(let string): return string
    case .integer(let value): return NSNumber(value: value)
    case .double(let value): return NSNumber(value: value)
    case .bool(let value): return value
    case .data(let data): return data
    case .date(let date): return date
    case .array(let values): return values.map(\.foundationObject)
    case .dictionary(let values): return values.mapValues(\.foundationObject)
    }
  }

  /// Converts a decoded Foundation property-list object.
  ///
  /// - Returns: `nil` for anything that is not a property-list value with string keys.
  init?(foundationObject object: Any, depth: Int = 0) {
    guard depth < 512 else { return nil }
    if let string = object as? String {
      self = .string(string)
    } else if type(of: object) == Bool.self, let value = object as? Bool {
      self = .bool(value)
    } else if let number = object as? NSNumber {
      switch String(cString: number.objCType) {
      case "d", "f": self = .double(number.doubleValue)
      case "c", "B": self = .bool(number.boolValue)
      default: self = .integer(number.intValue)
      }
    } else if let date = object as? Date {
      self = .date(date)
    } else if let data = object as? Data {
      self = .data(data)
    } else if let values = object as? [Any] {
      var converted: [PropertyListValue] = []
      converted.reserveCapacity(values.count)
      for value in values {
        guard let element = PropertyListValue(foundationObject: value, depth: depth + 1) else {
          return nil
        }
        converted.append(element)
      }
      self = .array(converted)
    } else if let values = object as? [AnyHashable: Any] {
      var converted: [String: PropertyListValue] = [:]
      for (key, value) in values {
        guard let key = key.base as? String,
          let element = PropertyListValue(foundationObject: value, depth: depth + 1)
        else { return nil }
        converted[key] = element
      }
      self = .dictionary(converted)
    } else {
      return nil
    }
  }
}
