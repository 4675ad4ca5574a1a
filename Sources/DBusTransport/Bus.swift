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
/// else the session bus (`DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus` when it
/// is a socket) when it answers, else the ``EmbeddedBus``, started on demand.
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
      return [Candidate(address: address, fallsThrough: false)]
    case .system:
      let text =
        Environment.value("DBUS_SYSTEM_BUS_ADDRESS") ?? "unix:path=/var/run/dbus/system_bus_socket"
      return [Candidate(address: try BusAddress(text), fallsThrough: false)]
    case .embedded:
      return [Candidate(address: try EmbeddedBus.start(), fallsThrough: false)]
    case .session:
      guard let address = try Self.sessionAddress() else {
        throw DBusError(
          .noServer,
          "no session bus: DBUS_SESSION_BUS_ADDRESS is unset and $XDG_RUNTIME_DIR/bus is not a socket"
        )
      }
      return [Candidate(address: address, fallsThrough: false)]
    case .automatic:
      if let text = Environment.value("NOTIFYBUS_BUS_ADDRESS") {
        return [Candidate(address: try BusAddress(text), fallsThrough: false)]
      }
      var result: [Candidate] = []
      if let session = try Self.sessionAddress() {
        result.append(Candidate(address: session, fallsThrough: true))
      }
      result.append(Candidate(address: nil, fallsThrough: false))
      return result
    }
  }

  /// An address to try; `nil` means the embedded bus, started only when reached.
  package struct Candidate {
    package var address: BusAddress?
    package var fallsThrough: Bool
  }

  private static func sessionAddress() throws(DBusError) -> BusAddress? {
    if let text = Environment.value("DBUS_SESSION_BUS_ADDRESS") { return try BusAddress(text) }
    if let runtime = BaseDirectories().runtimeDirectory {
      var info = stat()
      let path = runtime + "/bus"
      if stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK {
        return .unixSocket(path)
      }
    }
    return nil
  }
}
