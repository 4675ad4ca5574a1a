import BusTestSupport
import DBus
import Glibc
import SystemSupport
import Testing

@testable import DBusCore

@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
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

  /// Under umask 000 and 022, every file the embedded bus start leaves is 0600 (bus.pid
  /// included, which dbus-daemon writes) in a 0700 directory.
  @Test(arguments: [0o000, 0o022] as [mode_t])
  func itsFilesArePrivateUnderAnyUmask(_ mask: mode_t) throws {
    let runtime = try makeRuntimeDirectory()
    defer { stopDaemon(in: runtime) }
    let result = try Products.run(
      "dbus-test-peer", ["resolve"], environment: environment(runtime), umask: mask)
    #expect(result.status == 0, "\(result)")
    let directory = runtime + "/notifybus"
    var info = stat()
    #expect(lstat(directory, &info) == 0)
    #expect(info.st_mode & 0o7777 == 0o700)
    for name in ["bus.pid", "bus.conf", "bus.lock", "bus.log"] {
      #expect(lstat(directory + "/" + name, &info) == 0, "\(name)")
      #expect(
        info.st_mode & 0o7777 == 0o600, "\(name) is \(String(info.st_mode & 0o7777, radix: 8))")
    }
  }

  @Test func aSymlinkedDirectoryIsRefused() throws {
    let runtime = try makeRuntimeDirectory()
    defer { stopDaemon(in: runtime) }
    symlink("/tmp", runtime + "/notifybus")
    let result = try Products.run("dbus-test-peer", ["resolve"], environment: environment(runtime))
    #expect(result.status == 1)
    #expect(result.error.contains("is a symbolic link, which is never followed"), "\(result)")
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

  @Test func theDaemonLogIsCappedAndWritesFromTheDaemonContinue() throws {
    let runtime = try makeRuntimeDirectory()
    defer { stopDaemon(in: runtime) }
    var environment = environment(runtime)
    environment["NOTIFYBUS_SERVICE_DIR"] = runtime + "/services"
    let result = try Products.run("dbus-test-peer", ["resolve"], environment: environment)
    #expect(result.status == 0, "\(result)")
    // The daemon keeps its standard error (DBUS_DEBUG_OUTPUT), which activated services
    // inherit: both write to bus.log.
    let service =
      "[D-BUS Service]\nName=org.notifybus.LogTest\nExec=/bin/sh -c 'echo marker-on-stderr >&2; exit 3'\n"
    let file = open(runtime + "/services/org.notifybus.LogTest.service", O_WRONLY | O_CREAT, 0o600)
    _ = Array(service.utf8).withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
    close(file)
    let address = "unix:path=\(runtime)/notifybus/bus"
    _ = try Products.runCommand(
      "dbus-send",
      ["--bus=" + address, "--print-reply", "--dest=org.notifybus.LogTest", "/", "a.b.C"])
    let log = runtime + "/notifybus/bus.log"
    let written = try Products.runCommand("cat", [log]).output
    #expect(written.contains("Activating service name='org.notifybus.LogTest'"), "\(written)")
    #expect(written.contains("marker-on-stderr"), "\(written)")
    let fd = open(log, O_WRONLY | O_APPEND)
    let filler = [UInt8](repeating: UInt8(ascii: "x"), count: EmbeddedBus.logLimit + 1)
    #expect(filler.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == filler.count)
    close(fd)
    // The next process to find the bus caps the log.
    let again = try Products.run("dbus-test-peer", ["resolve"], environment: environment)
    #expect(again.status == 0, "\(again)")
    var info = stat()
    #expect(stat(log, &info) == 0 && info.st_size < 4096, "\(info.st_size)")
    #expect(stat(log + ".1", &info) == 0 && Int(info.st_size) > EmbeddedBus.logLimit)
  }

  @Test func aRuntimeDirectoryMustBeTheUsers() throws {
    let runtime = try makeRuntimeDirectory()
    defer { Subprocess.removeTree(runtime) }
    #expect(EmbeddedBus.ownedDirectory(runtime) == runtime)
    chmod(runtime, 0o777)
    #expect(EmbeddedBus.ownedDirectory(runtime) == nil, "others may write it")
    chmod(runtime, 0o700)
    symlink(runtime, runtime + "/link")
    #expect(EmbeddedBus.ownedDirectory(runtime + "/link") == nil, "a symbolic link")
    #expect(EmbeddedBus.ownedDirectory(runtime + "/missing") == nil)
  }
}

extension String {
  func trimmingCharacters() -> String {
    String(self.filter { !$0.isWhitespace })
  }
}
