public import DBus

/// An activation failure: a stable code, a message that says what was being done and what
/// went wrong, and the lower error it came from.
///
/// ```swift
/// do {
///   let opening = try await URLOpener.open(url, on: connection)
/// } catch where error.code == .noHandler {
///   // No installed application handles the URL's scheme.
/// } catch {
///   if case .dbus(let lower)? = error.cause, lower.name == .serviceUnknown { ... }
/// }
/// ```
public struct ActivationError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What kind of failure this is.
  public var code: Code
  /// A sentence for people: what was being done, naming the application, the URL or the
  /// file, and why it failed.
  public var message: String
  /// The error of the layer below that this one came from, when there is one.
  public var cause: Cause?

  /// Creates an error.
  public init(_ code: Code, _ message: String, cause: Cause? = nil) {
    self.code = code
    self.message = message
    self.cause = cause
  }

  /// The message.
  public var description: String { message }

  /// The lower error an ``ActivationError`` came from.
  public enum Cause: Sendable, Hashable {
    /// The bus, or the application over it, answered with an error.
    case dbus(DBusError)
    /// A desktop entry or `mimeapps.list` could not be read.
    case entry(DesktopEntryError)
    /// The desktop's URL handler (`gio open`, `xdg-open`) failed: how it ended and what it
    /// wrote on standard error.
    case launcher(command: String, status: String, output: String)
  }

  /// A stable error code, open for new members.
  public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code's name, for example `noHandler`.
    public let rawValue: String
    /// Creates a code from its name.
    public init(rawValue: String) { self.rawValue = rawValue }
    /// The code's name.
    public var description: String { rawValue }

    /// An application id is not a valid D-Bus well-known name.
    public static var invalidID: Code { .init(rawValue: "invalidID") }
    /// A URL is not absolute, or the application does not open it.
    public static var invalidURL: Code { .init(rawValue: "invalidURL") }
    /// No installed application handles the URL's scheme.
    public static var noHandler: Code { .init(rawValue: "noHandler") }
    /// The bus could not be reached, or refused the application its name.
    public static var bus: Code { .init(rawValue: "bus") }
    /// The bus could not start the application (no service file, or it failed to start).
    public static var activationFailed: Code { .init(rawValue: "activationFailed") }
    /// The application answered `Open`, `Activate` or `ActivateAction` with an error.
    public static var requestFailed: Code { .init(rawValue: "requestFailed") }
    /// The desktop's URL handler could not be run or failed.
    public static var launcherFailed: Code { .init(rawValue: "launcherFailed") }
  }
}
