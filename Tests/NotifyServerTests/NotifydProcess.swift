import DBus
import Synchronization
import SystemSupport
import TestSupport

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
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline {
      let owner = try? await connection.owner(of: "org.notifybus.Notify1")
      if (owner != nil) == present { return }
      try await Task.sleep(for: .milliseconds(10))
    }
    throw DBusError(.timeout, "org.notifybus.Notify1 did not \(present ? "appear" : "go away")")
  }

  /// Sends SIGTERM and waits (10 s at most) for the exit.
  func terminate() -> Subprocess.Termination? {
    process.kill(SIGTERM)
    return process.wait(milliseconds: 10_000)
  }

  /// What it wrote to standard error.
  var log: String { (try? Products.runCommand("cat", [logPath]).output) ?? "" }
}

/// A method call to notifyd.
func notifydCall(_ member: MemberName, _ body: [DBusValue] = []) -> Message {
  .methodCall(
    destination: "org.notifybus.Notify1", path: "/org/notifybus/Notify1",
    interface: "org.notifybus.Notify1", member: member, body: body)
}

/// Writes `text` to `path`.
func writeFile(_ path: String, _ text: String, mode: mode_t = 0o600) {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
  _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
  close(fd)
}

/// Reads `path`, or `nil` when it does not exist.
func readFile(_ path: String) -> String? {
  guard access(path, F_OK) == 0 else { return nil }
  return try? Products.runCommand("cat", [path]).output
}
