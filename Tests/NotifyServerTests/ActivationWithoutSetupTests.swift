import BusTestSupport
import DBus
import SystemSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The embedded bus starts the notifyd beside the tool that started it, with no setup step:
/// what a fresh clone sees after `swift build`.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct ActivationWithoutSetupTests {
  let sandbox: EmbeddedBusSandbox

  init() throws { sandbox = try EmbeddedBusSandbox() }

  @Test func stateCommandsWorkOnAFreshEmbeddedBus() async throws {
    defer { sandbox.stop() }
    let set = try await Products.runAsync(
      "notifyutil", ["-s", "foo", "5"], environment: sandbox.environment)
    #expect(set.status == 0 && set.output.isEmpty && set.error.isEmpty, "\(set)")
    let get = try await Products.runAsync(
      "notifyutil", ["-g", "foo"], environment: sandbox.environment)
    #expect(get.output == "foo 5\n", "\(get)")
    let file = try #require(readFile(sandbox.generatedServiceFile))
    #expect(file.hasPrefix("# Written by the NotifyBus embedded bus"))
    #expect(file.contains("\nExec=\(Products.path("notifyd"))\n"), "\(file)")
    // The embedded dbus-daemon's messages, and the activation, are in bus.log.
    let log = try #require(readFile(sandbox.runtime + "/notifybus/bus.log"))
    #expect(log.contains("Activating service name='org.notifybus.Notify1'"), "\(log)")
  }

  @Test func anInstalledServiceFileReplacesTheGeneratedOne() async throws {
    defer { sandbox.stop() }
    _ = try await Products.runAsync("notifyutil", ["-g", "foo"], environment: sandbox.environment)
    #expect(readFile(sandbox.generatedServiceFile) != nil)
    let installed = sandbox.directory + "/data/dbus-1/services"
    _ = try await Products.runCommandAsync("mkdir", ["-p", installed])
    writeFile(
      installed + "/org.notifybus.Notify1.service",
      "[D-BUS Service]\nName=org.notifybus.Notify1\nExec=\(Products.path("notifyd"))\n")
    let get = try await Products.runAsync(
      "notifyutil", ["-g", "foo"], environment: sandbox.environment)
    #expect(get.output == "foo 0\n", "\(get)")
    #expect(readFile(sandbox.generatedServiceFile) == nil, "the generated file must go")
  }

  @Test func aServiceFileWrittenByTheUserIsLeftAlone() async throws {
    defer { sandbox.stop() }
    let own = "[D-BUS Service]\nName=org.notifybus.Notify1\nExec=/nonexistent/notifyd\n"
    _ = try await Products.runCommandAsync("mkdir", ["-p", sandbox.serviceDirectory])
    writeFile(sandbox.generatedServiceFile, own)
    let get = try await Products.runAsync(
      "notifyutil", ["-g", "foo"], environment: sandbox.environment)
    #expect(get.output == "foo: Failed with code 9\n", "\(get)")
    #expect(get.error.contains("notifyd is not running"), "\(get)")
    #expect(readFile(sandbox.generatedServiceFile) == own)
  }
}

/// A home, data and runtime directory of a test's own, for tools that start the embedded
/// bus; ``stop()`` ends the bus and the notifyd it started.
struct EmbeddedBusSandbox {
  let directory: String

  init() throws {
    var template = Array("/tmp/notifybus-sandbox-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw Errno.current }
    directory = String(cString: made)
    for name in ["home", "run", "data", "state"] { mkdir(directory + "/" + name, 0o700) }
  }

  var runtime: String { directory + "/run" }
  var serviceDirectory: String { directory + "/data/notifybus/dbus-1/services" }
  var generatedServiceFile: String { serviceDirectory + "/org.notifybus.Notify1.service" }
  var busAddress: BusAddress { .unixSocket(runtime + "/notifybus/bus") }

  /// No session bus, and every XDG directory inside the sandbox.
  var environment: [String: String] {
    [
      "HOME": directory + "/home", "XDG_RUNTIME_DIR": runtime,
      "XDG_DATA_HOME": directory + "/data", "XDG_DATA_DIRS": directory + "/none",
      "XDG_STATE_HOME": directory + "/state", "DBUS_SESSION_BUS_ADDRESS": "",
      "NOTIFYBUS_BUS_ADDRESS": "", "NOTIFYBUS_SERVICE_DIR": "",
      // Not run by systemd, whatever runs the tests: notifyd logs to its file.
      "INVOCATION_ID": "", "JOURNAL_STREAM": "",
    ]
  }

  /// The pid of the process owning `org.notifybus.Notify1` on the sandbox's bus.
  func notifydProcessID() -> pid_t? {
    let reply = try? Products.runCommand(
      "dbus-send",
      [
        "--bus=" + busAddress.rawValue, "--print-reply", "--dest=org.freedesktop.DBus",
        "/org/freedesktop/DBus", "org.freedesktop.DBus.GetConnectionUnixProcessID",
        "string:org.notifybus.Notify1",
      ])
    guard let reply, reply.status == 0, let last = reply.output.split(separator: " ").last else {
      return nil
    }
    return pid_t(last.filter { $0.isNumber })
  }

  /// Ends notifyd (`SIGTERM`, so it writes its state) and the bus, then removes the
  /// directory.
  func stop() {
    if let notifyd = notifydProcessID() {
      kill(notifyd, SIGTERM)
      for _ in 0..<200 where kill(notifyd, 0) == 0 { usleep(10_000) }
    }
    if let text = readFile(runtime + "/notifybus/bus.pid"),
      let pid = pid_t(text.split(separator: "\n").first ?? "")
    {
      kill(pid, SIGTERM)
    }
    Subprocess.removeTree(directory)
  }
}
