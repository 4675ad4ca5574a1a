/// Why `notifyd` could not start or stopped: a stable code and a message naming the
/// bus, name or file involved.
public struct NotifydError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What kind of failure it is.
  public struct Code: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The bus cannot be reached.
    public static let bus = Code(rawValue: "bus")
    /// Another connection owns `org.notifybus.Notify1`.
    public static let nameTaken = Code(rawValue: "name-taken")
    /// The bus refused the name (policy) or the export.
    public static let nameRefused = Code(rawValue: "name-refused")
    /// The access configuration cannot be read or is malformed.
    public static let configuration = Code(rawValue: "configuration")
    /// The state file cannot be read, moved aside or written.
    public static let stateFile = Code(rawValue: "state-file")
    /// An MQTT bridge cannot be set up.
    public static let bridge = Code(rawValue: "bridge")
    /// The D-Bus service file cannot be written.
    public static let serviceFile = Code(rawValue: "service-file")
  }

  /// The stable code.
  public var code: Code
  /// What went wrong, for people.
  public var message: String

  /// Creates an error.
  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
  }

  public var description: String { message }
}
