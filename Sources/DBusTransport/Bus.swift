public import DBusCodec
import DBusEmbeddedBus
public import DBusMessages
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Which bus a connection goes to.
///
/// ``automatic`` is what NotifyBus programs use: an explicit `NOTIFYBUS_BUS_ADDRESS`,
/// else the session bus (`DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`, or
/// `/run/user/<uid>/bus` when `XDG_RUNTIME_DIR` is unset, when it is a socket) when it
/// answers, else the ``EmbeddedBus``, started on demand. So a process without a desktop's
/// environment (cron, ssh, a service) meets the desktop's processes on the same bus.
public enum Bus: Hashable, Sendable, CustomStringConvertible {
  /// Resolve as described above.
  case automatic
  /// The user's session bus; no fallback.
  case session
  /// The system bus: `DBUS_SYSTEM_BUS_ADDRESS`, else `/var/run/dbus/system_bus_socket`.
  case system
  /// The embedded per-user bus, started if needed.
  case embedded
  /// An explicit address.
  case address(BusAddress)

  /// Parses a command-line choice: `session`, `system`, `embedded`, `auto`, or an
  /// address.
  ///
  /// - Throws: ``DBusError`` with name ``DBusError/Name/badAddress`` when the text is
  ///   none of these.
  public init(parsing text: String) throws(DBusError) {
    switch text {
    case "auto", "automatic": self = .automatic
    case "session": self = .session
    case "system": self = .system
    case "embedded": self = .embedded
    default: self = .address(try BusAddress(text))
    }
  }

  public var description: String {
    switch self {
    case .automatic: "automatic"
    case .session: "session"
    case .system: "system"
    case .embedded: "embedded"
    case .address(let address): address.rawValue
    }
  }

  /// The addresses to try, in order, for this choice.
  ///
  /// May start the embedded bus.
  ///
  /// - Throws: ``DBusError`` when an address from the environment is malformed, when
  ///   there is no session bus for ``session``, or when the embedded bus cannot start.
  package func candidates() throws(DBusError) -> [Candidate] {
    switch self {
    case .address(let address):
      return [Candidate(address: address, fallsThrough: false, reason: "the address given")]
    case .system:
      if let text = Environment.value("DBUS_SYSTEM_BUS_ADDRESS") {
        return [
          Candidate(
            address: try BusAddress(text), fallsThrough: false,
            reason: "the system bus, from DBUS_SYSTEM_BUS_ADDRESS")
        ]
      }
      return [
        Candidate(
          address: .unixSocket("/var/run/dbus/system_bus_socket"), fallsThrough: false,
          reason: "the system bus, at its standard socket")
      ]
    case .embedded:
      return [
        Candidate(address: try EmbeddedBus.start(), fallsThrough: false, reason: "the embedded bus")
      ]
    case .session:
      guard let session = try Self.sessionCandidate() else {
        throw DBusError(
          .noServer,
          "no session bus: DBUS_SESSION_BUS_ADDRESS is unset and "
            + "\(EmbeddedBus.userRuntimeDirectory.map { $0 + "/bus" } ?? "$XDG_RUNTIME_DIR/bus") "
            + "is not a socket")
      }
      return [session]
    case .automatic:
      if let text = Environment.value("NOTIFYBUS_BUS_ADDRESS") {
        return [
          Candidate(
            address: try BusAddress(text), fallsThrough: false,
            reason: "NOTIFYBUS_BUS_ADDRESS is set")
        ]
      }
      var result: [Candidate] = []
      if var session = try Self.sessionCandidate() {
        session.fallsThrough = true
        result.append(session)
      }
      result.append(
        Candidate(
          address: nil, fallsThrough: false,
          reason: result.isEmpty
            ? "there is no session bus" : "the session bus did not answer"))
      return result
    }
  }

  /// An address to try; `nil` means the embedded bus, started only when reached.
  package struct Candidate: Sendable {
    package var address: BusAddress?
    package var fallsThrough: Bool
    /// Why this bus is tried, in words: `DBUS_SESSION_BUS_ADDRESS is set`.
    package var reason: String
  }

  /// The session bus from the environment: `DBUS_SESSION_BUS_ADDRESS`, else the `bus`
  /// socket in `EmbeddedBus.userRuntimeDirectory`.
  private static func sessionCandidate() throws(DBusError) -> Candidate? {
    if let text = Environment.value("DBUS_SESSION_BUS_ADDRESS") {
      return Candidate(
        address: try BusAddress(text), fallsThrough: false,
        reason: "the session bus, from DBUS_SESSION_BUS_ADDRESS")
    }
    guard let runtime = EmbeddedBus.userRuntimeDirectory else { return nil }
    var info = stat()
    let path = runtime + "/bus"
    guard stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK else { return nil }
    let source =
      BaseDirectories().runtimeDirectory != nil
      ? "$XDG_RUNTIME_DIR/bus" : "\(path), as XDG_RUNTIME_DIR is unset,"
    return Candidate(
      address: .unixSocket(path), fallsThrough: false,
      reason: "the session bus: \(source) is a socket")
  }
}
