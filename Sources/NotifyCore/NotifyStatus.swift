public import DBusCore

/// A status code with Darwin's `notify(3)` numeric values.
///
/// An open struct in the style of swift-system's `Errno`: codes compare by value and
/// unknown values round-trip.
///
/// ```swift
/// do {
///   try center.check(token)
/// } catch NotifyStatus.invalidToken {
///   // cancelled already
/// }
/// ```
public struct NotifyStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }

  /// Success.
  ///
  /// The corresponding C status is `NOTIFY_STATUS_OK`.
  public static let ok = NotifyStatus(rawValue: 0)
  /// The name is not valid.
  ///
  /// The corresponding C status is `NOTIFY_STATUS_INVALID_NAME`.
  public static let invalidName = NotifyStatus(rawValue: 1)
  /// The token is not a live registration.
  ///
  /// The corresponding C status is `NOTIFY_STATUS_INVALID_TOKEN`.
  public static let invalidToken = NotifyStatus(rawValue: 2)
  /// The port is not valid.
  ///
  /// The corresponding C status is `NOTIFY_STATUS_INVALID_PORT`.
  public static let invalidPort = NotifyStatus(rawValue: 3)
  /// The file descriptor was not made by this library.
  ///
  /// The corresponding C status is `NOTIFY_STATUS_INVALID_FILE`.
  public static let invalidFile = NotifyStatus(rawValue: 4)
  /// The signal number is not valid.
  ///
  /// The corresponding C status is `NOTIFY_STATUS_INVALID_SIGNAL`.
  public static let invalidSignal = NotifyStatus(rawValue: 5)
  /// The request is not valid.
  ///
  /// The corresponding C status is `NOTIFY_STATUS_INVALID_REQUEST`.
  public static let invalidRequest = NotifyStatus(rawValue: 6)
  /// The caller may not act on that name.
  ///
  /// The corresponding C status is `NOTIFY_STATUS_NOT_AUTHORIZED`.
  public static let notAuthorized = NotifyStatus(rawValue: 7)
  /// The library is disabled.
  ///
  /// The corresponding C status is `NOTIFY_STATUS_OPT_DISABLE`.
  public static let optionDisabled = NotifyStatus(rawValue: 8)
  /// No notification server answers.
  ///
  /// The corresponding C status is `NOTIFY_STATUS_SERVER_NOT_FOUND`.
  public static let serverNotFound = NotifyStatus(rawValue: 9)
  /// A required input is missing.
  ///
  /// The corresponding C status is `NOTIFY_STATUS_NULL_INPUT`.
  public static let nullInput = NotifyStatus(rawValue: 10)
  /// An internal failure; the caller may try again.
  ///
  /// The corresponding C status is `NOTIFY_STATUS_FAILED`.
  public static let failed = NotifyStatus(rawValue: 1_000_000)

  public var description: String {
    switch self {
    case .ok: "OK"
    case .invalidName: "invalid name"
    case .invalidToken: "invalid token"
    case .invalidPort: "invalid port"
    case .invalidFile: "invalid file"
    case .invalidSignal: "invalid signal"
    case .invalidRequest: "invalid request"
    case .notAuthorized: "not authorized"
    case .optionDisabled: "disabled"
    case .serverNotFound: "server not found"
    case .nullInput: "missing input"
    case .failed: "failed"
    default: "status \(rawValue)"
    }
  }

  /// Lets `catch NotifyStatus.invalidName` match a thrown ``NotifyError``.
  public static func ~= (pattern: NotifyStatus, error: any Error) -> Bool {
    (error as? NotifyError)?.status == pattern
  }
}

/// A failed notify operation: its ``NotifyStatus``, a message naming what was being done and
/// what was wrong, and the lower error it came from.
///
/// ```swift
/// do {
///   try center.post("group.example.saved")
/// } catch {
///   if case .bus(let lower)? = error.cause, lower.name == .disconnected { reconnect() }
/// }
/// ```
public struct NotifyError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The Darwin-compatible status.
  public var status: NotifyStatus
  /// What went wrong, for people.
  public var message: String
  /// The error of the layer below that this one came from, when there is one.
  public var cause: Cause?

  /// Creates an error.
  public init(_ status: NotifyStatus, _ message: String, cause: Cause? = nil) {
    self.status = status
    self.message = message
    self.cause = cause
  }

  public var description: String { message }

  /// The lower error a ``NotifyError`` came from, typed.
  public enum Cause: Sendable, Hashable {
    /// The bus, or the service on it, failed: ``DBusError`` keeps the D-Bus error name.
    case bus(DBusError)
    /// A system call failed with this `errno`.
    case systemCall(String, errno: CInt)
  }
}
