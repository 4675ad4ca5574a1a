/// Why bytes are not a property list this module accepts.
public struct PropertyListError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What is wrong, and where.
  public var message: String

  public init(_ message: String) { self.message = message }

  public var description: String { message }
}
