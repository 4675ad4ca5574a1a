import BusTestSupport
import DBus
import Notify
import SystemSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `Protocol/dbus/org.notifybus.Notify1.conf` on a system-type bus, with `nobody` standing
/// in for `notifybus`'s neighbours: only root (and `notifybus`) may own the name and send
/// `Posted` signals; everyone may call notifyd.
@Suite(
  .enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)),
  .enabled(if: access("/usr/bin/setpriv", X_OK) == 0 && getuid() == 0))
struct SystemBusPolicyTests {
  let bus: PrivateBus
  let daemon: Subprocess
  let address: BusAddress

  init() throws {
    bus = try PrivateBus(allowingEveryUser: true)
    let root = Repository.root
    let policy = try #require(readFile(root + "/Protocol/dbus/org.notifybus.Notify1.conf"))
    writeFile(bus.directory + "/policy.conf", policy, mode: 0o644)
    let socket = bus.directory + "/system_bus_socket"
    writeFile(
      bus.directory + "/system.conf",
      """
      <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
       "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
      <busconfig>
        <type>system</type>
        <listen>unix:path=\(socket)</listen>
        <auth>EXTERNAL</auth>
        <policy context="default">
          <allow user="*"/>
          <deny own="*"/>
          <deny send_type="method_call"/>
          <allow send_type="signal"/>
          <allow send_requested_reply="true" send_type="method_return"/>
          <allow send_requested_reply="true" send_type="error"/>
          <allow receive_type="method_call"/>
          <allow receive_type="method_return"/>
          <allow receive_type="error"/>
          <allow receive_type="signal"/>
          <allow send_destination="org.freedesktop.DBus"/>
        </policy>
        <include>\(bus.directory)/policy.conf</include>
      </busconfig>

      """)
    daemon = try Subprocess.spawn(
      "dbus-daemon",
      arguments: [
        "--config-file=" + bus.directory + "/system.conf", "--nofork", "--print-address=1",
      ],
      errorFile: bus.directory + "/system.log")
    guard daemon.readLine(milliseconds: 10_000) != nil else {
      daemon.kill()
      daemon.wait()
      throw DBusError(.spawnFailed, "the system-type dbus-daemon did not start")
    }
    address = .unixSocket(socket)
  }

  func runAsNobody(_ tool: String, _ arguments: [String]) throws -> Products.Result {
    try Products.runCommand(
      "/usr/bin/setpriv",
      ["--reuid=65534", "--regid=65534", "--clear-groups", Products.path(tool)] + arguments,
      environment: ["HOME": "/nonexistent"], timeout: 15)
  }

  @Test func onlyTheServiceUserOwnsTheNameAndSendsPosted() async throws {
    defer {
      daemon.kill()
      daemon.wait()
    }
    let refused = try runAsNobody("notifyd", ["--bus", address.rawValue, "--no-persist"])
    #expect(refused.status == 1)
    #expect(
      refused.error.hasPrefix("Error: the bus refused org.notifybus.Notify1 to this process: "),
      "\(refused)")
    let notifyd = try Subprocess.spawn(
      Products.path("notifyd"), arguments: ["--bus", address.rawValue, "--no-persist"],
      captureOutput: false, errorFile: bus.directory + "/notifyd.log")
    defer {
      notifyd.kill()
      notifyd.wait()
    }
    let receiver = try await NotifyCenter.connect(to: .address(address))
    await waitUntil { (try? await receiver.connection.owner(of: "org.notifybus.Notify1")) != nil }
    let token = try await receiver.registerCheck("group.example.fenced")
    _ = try receiver.check(token)
    // Everyone may call notifyd.
    let set = try runAsNobody(
      "notifyutil", ["--bus", address.rawValue, "-s", "a.b", "3", "-g", "a.b"])
    #expect(set.output == "a.b 3\n", "\(set)")
    // A direct Posted signal from another user is dropped by the bus; a mediated one passes.
    let direct = try runAsNobody(
      "notify-post", ["--bus", address.rawValue, "group.example.fenced"])
    #expect(direct.status == 0, "\(direct)")
    let mediated = try runAsNobody(
      "notify-post", ["--bus", address.rawValue, "--mediated", "group.example.fenced"])
    #expect(mediated.status == 0, "\(mediated)")
    try await waitUntil { try receiver.postCount(token) > 0 }
    try await settle()
    #expect(try receiver.postCount(token) == 1, "only the mediated post may arrive")
    await receiver.close()
  }
}
