package import DBus
import Synchronization
import SystemSupport
import TestSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A `dbus-daemon` of a test's own, listening on a socket in a fresh temporary
/// directory, killed with `SIGKILL` when the value is released.
///
/// The daemon uses the same generated configuration as the embedded bus, so D-Bus
/// activation works from ``serviceDirectory``. ``kill()`` and ``start()`` let a test
/// restart it on the same address.
package final class PrivateBus: Sendable {
  /// The temporary directory holding the socket, configuration and services.
  package let directory: String
  /// Where `.service` files for activation go.
  package let serviceDirectory: String
  /// The bus address.
  package let address: BusAddress
  /// Whether processes of every user may connect (the directory is then 0755).
  package let allowsEveryUser: Bool
  /// The bytes the daemon queues for one connection before it drops messages to it.
  package let outgoingLimit: Int
  private let daemon = Mutex<Subprocess?>(nil)
  private let temporary = TemporaryDirectory()

  /// Whether `dbus-daemon` can be found, for `.enabled(if:)`.
  package static var isAvailable: Bool {
    access("/usr/bin/dbus-daemon", X_OK) == 0 || access("/bin/dbus-daemon", X_OK) == 0
  }

  /// Creates a directory and starts a daemon in it.
  ///
  /// - Parameter allowingEveryUser: Let processes of other users connect (for access
  ///   control tests run with `setpriv`): the directory becomes 0755 and the policy gains
  ///   `<allow user="*"/>`.
  /// - Parameter outgoingLimit: `max_outgoing_bytes`, the embedded bus's by default.
  package init(
    allowingEveryUser: Bool = false,
    outgoingLimit: Int = BusConfiguration.maximumOutgoingBytes
  ) throws {
    self.outgoingLimit = outgoingLimit
    directory = temporary.path
    allowsEveryUser = allowingEveryUser
    if allowingEveryUser { chmod(directory, 0o755) }
    serviceDirectory = directory + "/services"
    mkdir(serviceDirectory, 0o700)
    address = .unixSocket(directory + "/bus")
    try start()
  }

  // The directory goes after the daemon, with `temporary`.
  deinit { kill() }

  /// Starts the daemon (again); returns once it accepts connections.
  package func start() throws {
    let configuration = directory + "/bus.conf"
    var text = BusConfiguration.embedded(
      socketPath: directory + "/bus", serviceDirectory: serviceDirectory,
      pidFile: directory + "/bus.pid", outgoingLimit: outgoingLimit)
    if allowsEveryUser {
      text = text.replacing(
        "<policy context=\"default\">",
        with: "<policy context=\"default\">\n    <allow user=\"*\"/>")
    }
    let fd = open(configuration, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { throw Errno.current }
    _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    unlink(directory + "/bus")
    unlink(directory + "/bus.pid")
    try daemon.withLock { slot throws in
      // What the bus starts by activation (notifyd above all) inherits the daemon's
      // environment: its state and log go into this bus's directory, never the real
      // user's `~/.local/state`. A test may still set its own (`updateActivationEnvironment`).
      var environment = Environment.all
      environment["XDG_STATE_HOME"] = directory + "/state"
      let process = try Subprocess.spawn(
        "dbus-daemon",
        arguments: ["--config-file=" + configuration, "--nofork", "--print-address=1"],
        environment: environment, errorFile: directory + "/bus.log")
      guard process.readLine(milliseconds: 10_000) != nil else {
        process.kill()
        process.wait()
        throw DBusError(.spawnFailed, "dbus-daemon did not print its address")
      }
      slot = process
    }
  }

  /// Kills the daemon with `SIGKILL` and waits for it to end.
  package func kill() {
    daemon.withLock { process in
      process?.kill(SIGKILL)
      process?.wait()
      process = nil
    }
  }

  /// The daemon's process id, while it runs.
  package var pid: Int32? { daemon.withLock { $0?.pid } }
}
