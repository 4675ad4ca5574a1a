/// A registration's token: positive, unique within the process, never reused.
public struct NotifyToken: RawRepresentable, Hashable, Sendable, Comparable,
  CustomStringConvertible
{
  public let rawValue: Int32
  public init(rawValue: Int32) { self.rawValue = rawValue }

  public var description: String { String(rawValue) }

  public static func < (lhs: NotifyToken, rhs: NotifyToken) -> Bool {
    lhs.rawValue < rhs.rawValue
  }
}
