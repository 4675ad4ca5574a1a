import BusTestSupport
import DBus
import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A `notifyd` process on a test's private bus, killed with `SIGKILL` when released.
final class NotifydProcess {
  let process: Subprocess
  /// Its standard error.
  let logPath: String
  private static let counter = Atomic<Int>(0)

  /// Starts `notifyd --bus <bus> <arguments>` (under `umask` when given) and waits until
  /// it owns its name.
  init(
    bus: PrivateBus, _ arguments: [String], environment: [String: String] = [:],
    waitForName: Bool = true, umask: mode_t? = nil
  ) async throws {
    let number = Self.counter.add(1, ordering: .relaxed).newValue
    logPath = bus.directory + "/notifyd-\(number).log"
    var merged = Products.currentEnvironment()
    merged["HOME"] = bus.directory
    merged["XDG_STATE_HOME"] = nil
    for (key, value) in environment { merged[key] = value }
    let (program, words) = Products.underUmask(
      umask, Products.path("notifyd"), ["--bus", bus.address.rawValue] + arguments)
    process = try Subprocess.spawn(
      program, arguments: words, environment: merged, captureOutput: false, errorFile: logPath)
    if waitForName { try await Self.waitForOwner(bus) }
  }

  deinit {
    process.kill(SIGKILL)
    process.wait()
  }

  /// Waits until someone owns `org.notifybus.Notify1` on `bus` (10 s at most).
  static func waitForOwner(_ bus: PrivateBus, present: Bool = true) async throws {
    let connection = try await BusConnection.connect(to: .address(bus.address))
    defer { Task { await connection.close() } }
    let changed = await waitUntil {
      ((try? await connection.owner(of: "org.notifybus.Notify1")) != nil) == present
    }
    if changed { return }
    throw DBusError(.timeout, "org.notifybus.Notify1 did not \(present ? "appear" : "go away")")
  }

  /// Sends SIGTERM and waits (10 s at most) for the exit.
  func terminate() -> Subprocess.Termination? {
    process.kill(SIGTERM)
    return process.wait(milliseconds: 10_000)
  }

  /// What it wrote to standard error.
  var log: String { readFile(logPath) ?? "" }
}

/// A method call to notifyd.
func notifydCall(_ member: MemberName, _ body: [DBusValue] = []) -> Message {
  .methodCall(
    destination: "org.notifybus.Notify1", path: "/org/notifybus/Notify1",
    interface: "org.notifybus.Notify1", member: member, body: body)
}
