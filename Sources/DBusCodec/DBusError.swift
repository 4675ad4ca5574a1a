/// An error in D-Bus terms: an error name such as `org.freedesktop.DBus.Error.Failed`
/// and a human-readable message.
///
/// Errors that a peer returns arrive as these values, errors that a method handler
/// throws are sent back as these values, and the binding reports its own failures
/// (invalid names, an unreachable bus) the same way.
///
/// ```swift
/// do {
///   _ = try await connection.call(message)
/// } catch DBusError.Name.serviceUnknown {
///   print("nobody owns that name")
/// }
/// ```
public struct DBusError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The error's name, which classifies it.
  public var name: Name
  /// What went wrong, for people.
  public var message: String

  /// Creates an error.
  public init(_ name: Name, _ message: String) {
    self.name = name
    self.message = message
  }

  public var description: String { "\(name.rawValue): \(message)" }

  /// A D-Bus error name.
  ///
  /// This is an open set: peers may send any valid name.
  public struct Name: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A generic failure.
    ///
    /// The corresponding libdbus name is `DBUS_ERROR_FAILED`.
    public static let failed = Name(rawValue: "org.freedesktop.DBus.Error.Failed")
    /// Memory ran out.
    ///
    /// The corresponding libdbus name is `DBUS_ERROR_NO_MEMORY`.
    public static let noMemory = Name(rawValue: "org.freedesktop.DBus.Error.NoMemory")
    /// No service owns the destination name and none can be activated.
    public static let serviceUnknown = Name(rawValue: "org.freedesktop.DBus.Error.ServiceUnknown")
    /// The named bus name has no owner.
    public static let nameHasNoOwner = Name(rawValue: "org.freedesktop.DBus.Error.NameHasNoOwner")
    /// No reply arrived in time.
    public static let noReply = Name(rawValue: "org.freedesktop.DBus.Error.NoReply")
    /// A timeout passed.
    public static let timeout = Name(rawValue: "org.freedesktop.DBus.Error.Timeout")
    /// The caller may not do this.
    public static let accessDenied = Name(rawValue: "org.freedesktop.DBus.Error.AccessDenied")
    /// No bus could be reached at the address.
    public static let noServer = Name(rawValue: "org.freedesktop.DBus.Error.NoServer")
    /// The address is malformed.
    ///
    /// The corresponding libdbus name is `DBUS_ERROR_BAD_ADDRESS`.
    public static let badAddress = Name(rawValue: "org.freedesktop.DBus.Error.BadAddress")
    /// The connection is closed.
    public static let disconnected = Name(rawValue: "org.freedesktop.DBus.Error.Disconnected")
    /// The arguments are not valid for the call.
    public static let invalidArgs = Name(rawValue: "org.freedesktop.DBus.Error.InvalidArgs")
    /// The signature is not valid.
    public static let invalidSignature = Name(
      rawValue: "org.freedesktop.DBus.Error.InvalidSignature")
    /// The bytes received are not a well-formed message.
    public static let inconsistentMessage = Name(
      rawValue: "org.freedesktop.DBus.Error.InconsistentMessage")
    /// A message or a collection is over one of the specification's limits.
    public static let limitsExceeded = Name(rawValue: "org.freedesktop.DBus.Error.LimitsExceeded")
    /// A match rule is not valid.
    public static let matchRuleInvalid = Name(
      rawValue: "org.freedesktop.DBus.Error.MatchRuleInvalid")
    /// The object has no method of that name.
    public static let unknownMethod = Name(rawValue: "org.freedesktop.DBus.Error.UnknownMethod")
    /// No object exists at that path.
    public static let unknownObject = Name(rawValue: "org.freedesktop.DBus.Error.UnknownObject")
    /// The object has no interface of that name.
    public static let unknownInterface = Name(
      rawValue: "org.freedesktop.DBus.Error.UnknownInterface")
    /// Authentication with the bus failed.
    public static let authFailed = Name(rawValue: "org.freedesktop.DBus.Error.AuthFailed")
    /// A system call failed; the message names it.
    public static let ioError = Name(rawValue: "org.freedesktop.DBus.Error.IOError")
    /// A program needed to start a bus could not be started.
    public static let spawnFailed = Name(rawValue: "org.freedesktop.DBus.Error.Spawn.Failed")
  }
}

extension DBusError.Name {
  /// Lets `catch DBusError.Name.serviceUnknown` match a thrown ``DBusError``.
  public static func ~= (pattern: DBusError.Name, error: any Error) -> Bool {
    (error as? DBusError)?.name == pattern
  }
}

extension DBusError {
  /// An error for a value that breaks a rule of the D-Bus specification.
  static func invalid(_ what: String, _ value: some StringProtocol, _ rule: String) -> DBusError {
    DBusError(.invalidArgs, "invalid \(what) '\(value)': \(rule)")
  }
}
