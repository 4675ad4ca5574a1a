import BusTestSupport
import DBus
import Notify
import NotifyServer
import Testing

/// notifyutil and notify-post against a real notifyd.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct NotifydToolTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  var environment: [String: String] {
    ["NOTIFYBUS_BUS_ADDRESS": bus.address.rawValue, "DBUS_SESSION_BUS_ADDRESS": ""]
  }

  @Test func notifyutilSetsAndGetsStateAcrossProcesses() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let set = try Products.run("notifyutil", ["-s", "foo.bar", "123"], environment: environment)
    #expect(set.status == 0 && set.output.isEmpty, "\(set)")
    // Unlike Darwin, the state outlives the setting process's registrations.
    let get = try Products.run(
      "notifyutil", ["-g", "foo.bar", "-g", "never.set"], environment: environment)
    #expect(get.output == "foo.bar 123\nnever.set 0\n", "\(get)")
    let both = try Products.run(
      "notifyutil", ["-s", "foo.bar", "18446744073709551615", "-g", "foo.bar"],
      environment: environment)
    #expect(both.output == "foo.bar 18446744073709551615\n", "\(both)")
    _ = daemon
  }

  @Test func notifyPostStateSetsThenPosts() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let center = try await NotifyCenter.connect(to: .address(bus.address))
    let events = try await center.events(for: "group.example.saved", bufferSize: 4)
    let post = try Products.run(
      "notify-post", ["--state", "77", "group.example.saved"], environment: environment)
    #expect(post.status == 0, "\(post)")
    var iterator = events.makeAsyncIterator()
    let event = await iterator.next()
    #expect(event?.name == "group.example.saved")
    // The state was set before the post, so the handler reads it.
    #expect(try await center.state(of: "group.example.saved") == 77)
    let get = try Products.run(
      "notifyutil", ["-g", "group.example.saved"], environment: environment)
    #expect(get.output == "group.example.saved 77\n")
    _ = daemon
  }

  @Test func notifyPostMediatedGoesThroughNotifyd() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let center = try await NotifyCenter.connect(to: .address(bus.address), mediated: true)
    let events = try await center.events(for: "group.example.mediated", bufferSize: 4)
    let post = try Products.run(
      "notify-post", ["--mediated", "group.example.mediated"], environment: environment)
    #expect(post.status == 0, "\(post)")
    var iterator = events.makeAsyncIterator()
    let event = await iterator.next()
    #expect(event?.sender == center.mediatingService)
    _ = daemon
  }

  @Test func withoutNotifydStateCommandsFailWithCodeNine() throws {
    let get = try Products.run("notifyutil", ["-g", "foo.bar"], environment: environment)
    #expect(get.output == "foo.bar: Failed with code 9\n", "\(get)")
    // Darwin's line and exit status stay; one line on standard error says what to do.
    #expect(get.status == 0, "\(get)")
    #expect(
      get.error
        == "notifyutil: notifyd is not running and the bus cannot start it: run 'notifyd &', "
        + "or 'notifyd --install-service' once for D-Bus activation (see notifyd(8))\n",
      "\(get)")
    let post = try Products.run("notify-post", ["--mediated", "foo.bar"], environment: environment)
    #expect(post.status == 1)
    #expect(
      post.error.hasPrefix("Error: cannot post 'foo.bar' through notifyd: no notifyd answers"),
      "\(post)")
  }
}
