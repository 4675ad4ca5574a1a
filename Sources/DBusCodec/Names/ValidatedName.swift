/// A string that follows one of the D-Bus specification's naming rules.
///
/// Each conforming type checks its rule once, in ``init(_:)``; values are then valid by
/// construction. String literals are checked too, and an invalid literal is a programmer
/// error that stops the program.
public protocol ValidatedName: RawRepresentable<String>, Hashable, Sendable, Comparable,
  CustomStringConvertible, ExpressibleByStringLiteral
{
  /// What the name is called in error messages, such as `interface name`.
  static var kind: String { get }

  /// The rule `string` breaks, or `nil` when it is valid.
  static func violation(in string: String) -> String?

  /// Creates a name without checking it.
  ///
  /// Only for strings already checked, such as names in a message libdbus has validated.
  init(unchecked string: String)
}

extension ValidatedName {
  /// Creates a name, checking it against the specification.
  ///
  /// - Throws: ``DBusError`` with name ``DBusError/Name/invalidArgs`` and a message that
  ///   names the rule broken.
  public init(_ string: String) throws(DBusError) {
    if let rule = Self.violation(in: string) { throw .invalid(Self.kind, string, rule) }
    self.init(unchecked: string)
  }

  /// Creates a name from a raw value, or returns `nil` when it is not valid.
  public init?(rawValue: String) {
    guard Self.violation(in: rawValue) == nil else { return nil }
    self.init(unchecked: rawValue)
  }

  /// Creates a name from a literal; an invalid literal stops the program.
  public init(stringLiteral value: String) {
    if let rule = Self.violation(in: value) {
      preconditionFailure("invalid \(Self.kind) literal '\(value)': \(rule)")
    }
    self.init(unchecked: value)
  }

  /// Whether `string` is a valid name of this kind.
  public static func isValid(_ string: String) -> Bool { violation(in: string) == nil }

  public var description: String { rawValue }

  public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
