import BusTestSupport
import DBus
import Notify
import SystemSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The files notifyd creates and the file options it takes.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct NotifydFileTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  static func mode(_ path: String) -> mode_t? {
    var info = stat()
    guard lstat(path, &info) == 0 else { return nil }
    return info.st_mode & 0o7777
  }

  /// Under umask 000 and 022, the state file is 0600 and the directories notifyd creates
  /// for it are 0700; so is the service file `--install-service` writes.
  @Test(arguments: [0o000, 0o022] as [mode_t])
  func theStateAndServiceFilesArePrivateUnderAnyUmask(_ mask: mode_t) async throws {
    let directory = bus.directory + "/umask-\(String(mask, radix: 8))"
    let statePath = directory + "/deep/state/notifyd.state"
    let daemon = try await NotifydProcess(bus: bus, ["--state-file", statePath], umask: mask)
    let client = try await NotifyCenter.connect(to: .address(bus.address))
    try await client.setState(1, for: "group.example.mode")
    #expect(daemon.terminate() == .exited(0))
    #expect(Self.mode(statePath) == 0o600)
    for created in [directory, directory + "/deep", directory + "/deep/state"] {
      #expect(Self.mode(created) == 0o700, "\(created)")
    }
    let services = directory + "/services"
    let install = try Products.run(
      "notifyd", ["--install-service", "--service-dir", services, "--no-persist"], umask: mask)
    #expect(install.status == 0, "\(install)")
    #expect(Self.mode(services) == 0o700)
    #expect(Self.mode(services + "/org.notifybus.Notify1.service") == 0o600)
    let leftovers = try Products.runCommand("ls", ["-A", directory + "/deep/state", services])
    #expect(!leftovers.output.contains(".tmp-"), "\(leftovers)")
  }

  /// `--state-file ''` is a usage error naming the option, not the current directory.
  @Test func anEmptyStateFileIsAUsageError() throws {
    let result = try Products.run("notifyd", ["--bus", bus.address.rawValue, "--state-file", ""])
    #expect(result.status == 64, "\(result)")
    #expect(result.error.contains("--state-file"), "\(result)")
  }

  /// A state file notifyd wrote in a directory another user could write is refused with
  /// a message saying why.
  @Test func aStateFileInAWorldWritableDirectoryIsRefused() async throws {
    let shared = bus.directory + "/shared"
    #expect(mkdir(shared, 0o700) == 0)
    #expect(chmod(shared, 0o777) == 0)
    let daemon = try await NotifydProcess(
      bus: bus, ["--state-file", shared + "/notifyd.state"], waitForName: false)
    #expect(daemon.process.wait(milliseconds: 10_000) == .exited(1))
    #expect(daemon.log.contains("lets other users write to it"), "\(daemon.log)")
  }
}
