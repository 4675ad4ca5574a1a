/// A tool's runtime failure: a stable code, a message saying what was being done and why it
/// failed (printed as `Error: <message>`, exit status 1), and the error it came from.
public struct ToolError: Error, CustomStringConvertible {
  /// What kind of failure this is.
  public var code: Code
  /// What was being done and what went wrong, for people.
  public var message: String
  /// The lower error, such as the ``DBusCore/DBusError`` or the `NotifyError`.
  public var cause: (any Error)?

  /// Creates an error.
  public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
    self.code = code
    self.message = message
    self.cause = cause
  }

  /// The message.
  public var description: String { message }

  /// A stable error code, open for new members like swift-system's `Errno`.
  public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code's name, for example `busUnreachable`.
    public let rawValue: String

    /// Creates a code from its name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The code's name.
    public var description: String { rawValue }

    /// The bus could not be reached, or the connection to it failed.
    public static var busUnreachable: Code { .init(rawValue: "busUnreachable") }
    /// notifyd refused the request, did not answer, or is not running.
    public static var serviceFailed: Code { .init(rawValue: "serviceFailed") }
    /// An App Group container could not be opened (the examples).
    public static var containerUnavailable: Code { .init(rawValue: "containerUnavailable") }
  }
}
