import Foundation

extension PropertyListValue {
  /// Converts an object graph produced by `PropertyListSerialization` into a value.
  ///
  /// Returns `nil` when the graph holds something that is not a property-list object, or
  /// a dictionary key that is not a string, or when it nests deeper than `maximumDepth`.
  public init?(propertyListObject object: Any, maximumDepth: Int = 64) {
    guard maximumDepth >= 0 else { return nil }
    switch object {
    case let value as String:
      self = .string(value)
    case let value as Bool where Self.isBoolean(object):
      self = .bool(value)
    case let value as NSNumber:
      self = Self.number(value)
    case let value as Int:
      self = .integer(Int64(value))
    case let value as Double:
      self = .double(value)
    case let value as Date:
      self = .date(value)
    case let value as Data:
      self = .data(value)
    case let value as [Any]:
      var elements: [PropertyListValue] = []
      elements.reserveCapacity(value.count)
      for element in value {
        guard
          let converted = PropertyListValue(
            propertyListObject: element, maximumDepth: maximumDepth - 1)
        else { return nil }
        elements.append(converted)
      }
      self = .array(elements)
    case let value as [String: Any]:
      var entries: [String: PropertyListValue] = [:]
      entries.reserveCapacity(value.count)
      for (key, element) in value {
        guard
          let converted = PropertyListValue(
            propertyListObject: element, maximumDepth: maximumDepth - 1)
        else { return nil }
        entries[key] = converted
      }
      self = .dictionary(entries)
    default:
      return nil
    }
  }

  /// The value as an object graph that `PropertyListSerialization` can write.
  public var propertyListObject: Any {
    switch self {
    case .string(let value): return value
    case .integer(let value): return NSNumber(value: value)
    case .double(let value): return NSNumber(value: value)
    case .bool(let value): return NSNumber(value: value)
    case .date(let value): return value
    case .data(let value): return value
    case .array(let elements): return elements.map(\.propertyListObject)
    case .dictionary(let entries): return entries.mapValues(\.propertyListObject)
    }
  }

  /// Whether `object` is a Boolean rather than a number that merely bridges to `Bool`.
  ///
  /// Foundation bridges every `NSNumber` holding 0 or 1 to `Bool`, so `is Bool` is not
  /// enough: a Boolean is either a native `Bool` or an instance of the class Foundation
  /// uses for `NSNumber(value: true)`.
  private static func isBoolean(_ object: Any) -> Bool {
    guard let number = object as? NSNumber else { return object is Bool }
    if type(of: object) == Bool.self { return true }
    return ObjectIdentifier(type(of: number)) == booleanClass
  }

  private static let booleanClass = ObjectIdentifier(type(of: NSNumber(value: true)))

  private static func number(_ number: NSNumber) -> PropertyListValue {
    // JSONSerialization hands long literals (integers at or below -10^18 among them) over as
    // decimal numbers, whose type code says double; an integral one that fits stays exact.
    if let decimal = number as? NSDecimalNumber {
      if let integer = Int64(decimal.stringValue) { return .integer(integer) }
      return .double(decimal.doubleValue)
    }
    let type = String(cString: number.objCType)
    switch type {
    case "f", "d":
      return .double(number.doubleValue)
    case "Q":
      if number.uint64Value > UInt64(Int64.max) { return .double(number.doubleValue) }
      return .integer(number.int64Value)
    default:
      return .integer(number.int64Value)
    }
  }
}
