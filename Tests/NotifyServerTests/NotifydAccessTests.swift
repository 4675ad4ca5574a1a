import BusTestSupport
import DBus
import Notify
import NotifyServer
import SystemSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Access control with clients run as another user (`setpriv`), which needs root.
@Suite(
  .enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)),
  .enabled(if: access("/usr/bin/setpriv", X_OK) == 0 && getuid() == 0))
struct NotifydAccessTests {
  let bus: PrivateBus
  let configuration: String

  init() throws {
    bus = try PrivateBus(allowingEveryUser: true)
    configuration = bus.directory + "/notify.conf"
    writeFile(
      configuration,
      "# Test rules.\n\nreserve com.example. 0 0 rwr-r-\nreserve com.example.open. 0 0 rwrwrw\n",
      mode: 0o644)
  }

  /// Runs a built tool as uid and gid 65534 with no supplementary groups.
  func runAsNobody(_ tool: String, _ arguments: [String]) throws -> Products.Result {
    try Products.runCommand(
      "/usr/bin/setpriv",
      ["--reuid=65534", "--regid=65534", "--clear-groups", Products.path(tool)] + arguments,
      environment: ["NOTIFYBUS_BUS_ADDRESS": bus.address.rawValue, "HOME": "/nonexistent"])
  }

  @Test func anotherUserMayNotPostOrSetReservedNames() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist", "--config", configuration])
    let address = bus.address.rawValue
    let userName = try runAsNobody("notify-post", ["--bus", address, "--mediated", "user.uid.0.x"])
    #expect(userName.status == 1)
    #expect(
      userName.error
        == "Error: cannot post 'user.uid.0.x' through notifyd: uid 65534 may not post "
        + "'user.uid.0.x': user.uid.0 names belong to uid 0 and root\n")
    let reserved = try runAsNobody(
      "notify-post", ["--bus", address, "--mediated", "com.example.x"])
    #expect(reserved.status == 1)
    #expect(
      reserved.error.contains(
        "uid 65534 may not post 'com.example.x': reserved by line 3 of \(configuration): "
          + "reserve com.example. 0 0 rwr-r-"), "\(reserved)")
    let state = try runAsNobody("notify-post", ["--bus", address, "--state", "5", "com.example.y"])
    #expect(state.status == 1)
    #expect(state.error.contains("uid 65534 may not set the state of 'com.example.y'"), "\(state)")
    let utility = try runAsNobody("notifyutil", ["--bus", address, "-s", "com.example.z", "3"])
    #expect(utility.output == "com.example.z: Failed with code 7\n", "\(utility)")
    // Reading is not restricted, and the deeper open rule lets everyone write.
    let read = try runAsNobody("notifyutil", ["--bus", address, "-g", "com.example.z"])
    #expect(read.output == "com.example.z 0\n", "\(read)")
    let open = try runAsNobody(
      "notify-post", ["--bus", address, "--mediated", "--state", "8", "com.example.open.a"])
    #expect(open.status == 0, "\(open)")
    let own = try runAsNobody(
      "notify-post", ["--bus", address, "--mediated", "user.uid.65534.mine"])
    #expect(own.status == 0, "\(own)")
    // Names that only look like uid 65534's are not: Darwin compares the exact spelling.
    for lookalike in ["user.uid.065534", "user.uid.65534x", "user.uid."] {
      let refused = try runAsNobody("notify-post", ["--bus", address, "--mediated", lookalike])
      #expect(refused.status == 1, "\(lookalike): \(refused)")
      #expect(refused.error.contains("uid 65534 may use only user.uid.65534"), "\(refused)")
    }
    let center = try await NotifyCenter.connect(to: .address(bus.address))
    #expect(try await center.state(of: "com.example.y") == 0)
    #expect(try await center.state(of: "com.example.open.a") == 8)
    // Root may do everything.
    try await center.setState(1, for: "com.example.y")
    #expect(try await center.state(of: "com.example.y") == 1)
    let connection = center.connection
    let statistics = try await connection.call(notifydCall("GetStatistics"))
    let values = try #require(statistics.body.first?.stringDictionary)
    #expect(values["Denied"] == .uint64(7))
    #expect(values["AccessRules"] == .uint32(2))
    _ = daemon
  }

  @Test func aMediatedPostFromAnotherUserReachesMediatedReceivers() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist", "--config", configuration])
    let receiver = try await NotifyCenter.connect(to: .address(bus.address), mediated: true)
    let events = try await receiver.events(for: "user.uid.65534.hello", bufferSize: 8)
    let post = try runAsNobody(
      "notify-post", ["--bus", bus.address.rawValue, "--mediated", "user.uid.65534.hello"])
    #expect(post.status == 0, "\(post)")
    var iterator = events.makeAsyncIterator()
    let event = await iterator.next()
    #expect(event?.name == "user.uid.65534.hello")
    #expect(event?.sender == receiver.mediatingService)
    _ = daemon
  }

  @Test func aBadConfigurationStopsNotifydNamingTheLine() async throws {
    writeFile(configuration, "reserve com.example. 0 0 rwr-r-\nreserve x 0 0 rwx---\n")
    let daemon = try await NotifydProcess(
      bus: bus, ["--no-persist", "--config", configuration], waitForName: false)
    #expect(daemon.process.wait(milliseconds: 10_000) == .exited(1))
    #expect(
      daemon.log
        == "Error: bad configuration: \(configuration):2: MODE 'rwx---' is not six characters "
        + "like rwr-r-\n")
  }
}
