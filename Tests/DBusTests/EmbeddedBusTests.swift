import DBus
import Glibc
import SystemSupport
import TestSupport
import Testing

@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(1)))
struct EmbeddedBusTests {
  /// A fresh XDG_RUNTIME_DIR, with no session bus in the environment.
  func environment(_ runtime: String) -> [String: String] {
    [
      "XDG_RUNTIME_DIR": runtime, "XDG_DATA_HOME": runtime + "/data",
      "DBUS_SESSION_BUS_ADDRESS": "", "NOTIFYBUS_BUS_ADDRESS": "",
    ]
  }

  func makeRuntimeDirectory() throws -> String {
    var template = Array("/tmp/notifybus-xdg-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw Errno.current }
    return String(cString: made)
  }

  func stopDaemon(in runtime: String) {
    if let text = try? Products.runCommand("cat", [runtime + "/notifybus/bus.pid"]).output,
      let pid = Int32(text.split(separator: "\n").first ?? "")
    {
      kill(pid, SIGKILL)
    }
    Subprocess.removeTree(runtime)
  }

  @Test func processesStartingAtOnceShareOneDaemon() throws {
    let runtime = try makeRuntimeDirectory()
    defer { stopDaemon(in: runtime) }
    var merged = Products.currentEnvironment()
    for (key, value) in environment(runtime) { merged[key] = value }
    let peers = try (0..<4).map { _ in
      try Subprocess.spawn(
        Products.path("dbus-test-peer"), arguments: ["resolve"], environment: merged,
        captureOutput: true, captureError: true)
    }
    let results = peers.map { $0.readToEnd(milliseconds: 20_000) }
    for peer in peers { #expect(peer.wait(milliseconds: 5_000) == .exited(0)) }
    let busIDs = Set(results.map { $0.output.split(separator: " ").first ?? "" })
    #expect(busIDs.count == 1, "\(results)")
    #expect(results.allSatisfy { $0.output.contains("unix:path=\(runtime)/notifybus/bus") })
    let daemons = try Products.runCommand(
      "pgrep", ["-f", "-c", "config-file=\(runtime)/notifybus/bus.conf"])
    #expect(daemons.output.trimmingCharacters() == "1")

    let later = try Products.run("dbus-test-peer", ["resolve"], environment: environment(runtime))
    #expect(later.output.split(separator: " ").first == busIDs.first)
  }

  @Test func theDirectoryIsPrivate() throws {
    let runtime = try makeRuntimeDirectory()
    defer { stopDaemon(in: runtime) }
    let result = try Products.run("dbus-test-peer", ["resolve"], environment: environment(runtime))
    #expect(result.status == 0, "\(result)")
    var info = stat()
    #expect(lstat(runtime + "/notifybus", &info) == 0)
    #expect(info.st_mode & 0o777 == 0o700)
  }

  @Test func aSymlinkedDirectoryIsRefused() throws {
    let runtime = try makeRuntimeDirectory()
    defer { stopDaemon(in: runtime) }
    symlink("/tmp", runtime + "/notifybus")
    let result = try Products.run("dbus-test-peer", ["resolve"], environment: environment(runtime))
    #expect(result.status == 1)
    #expect(result.error.contains("is not a directory (a symbolic link is refused)"), "\(result)")
  }

  @Test func aMissingDaemonProgramIsNamed() throws {
    let runtime = try makeRuntimeDirectory()
    defer { stopDaemon(in: runtime) }
    var environment = environment(runtime)
    environment["NOTIFYBUS_DBUS_DAEMON"] = "/nonexistent/dbus-daemon"
    let result = try Products.run("dbus-test-peer", ["resolve"], environment: environment)
    #expect(result.status == 1)
    #expect(result.error.contains("cannot start '/nonexistent/dbus-daemon'"), "\(result)")
  }
}

extension String {
  func trimmingCharacters() -> String {
    String(self.filter { !$0.isWhitespace })
  }
}
