/// The state of one notification name as `notifyd` keeps it: the value and when it was set.
public struct StateRecord: Hashable, Sendable {
  /// The notification name (1 to 511 bytes of UTF-8, no NUL).
  public var name: String
  /// The 64-bit state.
  public var state: UInt64
  /// When the state was set, in nanoseconds since the Unix epoch (`CLOCK_REALTIME`).
  public var setTimeNanoseconds: UInt64

  /// Creates a record.
  public init(name: String, state: UInt64, setTimeNanoseconds: UInt64) {
    self.name = name
    self.state = state
    self.setTimeNanoseconds = setTimeNanoseconds
  }
}
