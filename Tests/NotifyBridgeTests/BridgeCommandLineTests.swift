import BusTestSupport
import DBus
import NotifyCore
import SystemSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// notifyd's bridge options and configuration lines, as a user types them.
@Suite(
  .enabled(if: PrivateBus.isAvailable && MosquittoBroker.isAvailable), .timeLimit(.minutes(2)))
struct BridgeCommandLineTests {
  func notifyd(_ arguments: [String]) throws -> Products.Result {
    try Products.run(
      "notifyd", ["--bus", "unix:path=/nonexistent/bus", "--no-persist"] + arguments, timeout: 20)
  }

  @Test(arguments: [
    (
      ["--bridge", "broker:1883", "--bridge-namespace", "a"],
      "--bridge: 'broker:1883' is not a broker URL"
    ),
    (
      ["--bridge", "mqtt://h:99999", "--bridge-namespace", "a"],
      "the port must be a number from 1 to 65535"
    ),
    (["--bridge", "mqtt://u:p@h", "--bridge-namespace", "a"], "credentials never go in the URL"),
    (["--bridge", "mqtt://h"], "--bridge needs at least one --bridge-namespace"),
    (["--bridge-namespace", "group.example"], "--bridge-namespace needs --bridge"),
    (
      ["--bridge", "mqtt://h", "--bridge-namespace", "self.mine"],
      "--bridge-namespace: 'self.mine' is not a namespace to bridge"
    ),
    (
      ["--bridge", "mqtt://h", "--bridge-namespace", ""],
      "--bridge-namespace: '' is not a namespace to bridge: it is empty"
    ),
    (
      ["--bridge", "mqtt://h", "--bridge-namespace", "a", "--bridge-password-file", "/p"],
      "--bridge-password-file needs --bridge-user"
    ),
  ])
  func usageErrorsNameTheOptionAndExit64(arguments: [String], message: String) throws {
    let result = try notifyd(arguments)
    #expect(result.status == 64, "\(result)")
    #expect(result.error.contains(message), "\(result.error)")
  }

  @Test func configurationErrorsNameTheLineAndExit1() throws {
    let bus = try PrivateBus()
    let path = bus.directory + "/notify.conf"
    writeText(
      path,
      "reserve com.example. 0 0 rwr-r-\nbridge mqtt://h\nbridge-namespace a\nbridge-queue lots\n")
    let result = try notifyd(["--config", path])
    #expect(result.status == 1, "\(result)")
    #expect(
      result.error.contains("\(path):4: bridge-queue: 'lots' is not a number"), "\(result.error)")
    writeText(
      path, "bridge mqtt://h\nbridge-namespace a\nbridge-user alice\nbridge-password-file missing\n"
    )
    let missing = try notifyd(["--config", path])
    #expect(missing.status == 1)
    #expect(
      missing.error.contains(
        "bridge-password-file of \(path):1: cannot open '\(bus.directory)/missing'"),
      "\(missing.error)")
  }

  @Test func theAccessRulesOfAFileWithBridgeLinesStillApply() async throws {
    let broker = try MosquittoBroker()
    let path = broker.directory + "/notify.conf"
    writeText(
      path,
      "reserve com.example. 0 0 rwr-r-\nbridge \(broker.url)\nbridge-namespace group.example\n")
    let host = try await BridgedHost(["--config", path])
    let statistics = try await host.statistics()
    #expect(statistics["AccessRules"] == .uint32(1))
    let rows = try await host.bridges()
    #expect(rows.count == 1)
    #expect(rows.first?["Broker"] == .string(broker.url))
    #expect(rows.first?["Connected"] == .boolean(true))
    // notifybus status shows the bridge, as a line and as JSON.
    let environment = ["NOTIFYBUS_BUS_ADDRESS": host.bus.address.rawValue]
    let status = try await Products.runAsync("notifybus", ["status"], environment: environment)
    #expect(
      status.output.contains(
        "  bridge \(broker.url): connected, published 0, received 0, queued 0, dropped 0, "),
      "\(status)")
    #expect(!status.output.contains("Bridges"), "\(status)")
    let json = try await Products.runAsync(
      "notifybus", ["status", "--json"], environment: environment)
    #expect(json.output.contains("\"Bridges\":[{"), "\(json)")
    #expect(json.output.contains("\"Broker\":\"\(broker.url)\""), "\(json)")
    #expect(json.output.contains("\"Connected\":true"), "\(json)")
    // The status dump has a line for the bridge.
    host.process.kill(SIGUSR1)
    let deadline = ContinuousClock.now + .seconds(10)
    while !host.log.contains("status: end") && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    #expect(
      host.log.contains(
        "notifyd: status: bridge \(broker.url) connected published 0 received 0 queued 0 "),
      "\(host.log)")
  }

  @Test func anUnreachableBrokerLeavesNotifydServing() async throws {
    let port = try MosquittoBroker.freePort()
    let host = try await BridgedHost(
      ["--bridge", "mqtt://127.0.0.1:\(port)", "--bridge-namespace", "group.example"],
      waitForBridges: false)
    try await host.setState("group.example.local", 4)
    #expect(try await host.state("group.example.local") == 4)
    try await host.post("group.example.local")
    let deadline = ContinuousClock.now + .seconds(10)
    while !host.log.contains("cannot reach the broker") && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(50))
    }
    #expect(
      host.log.contains("bridge mqtt://127.0.0.1:\(port): cannot reach the broker ("), "\(host.log)"
    )
    // notifyd queues the post when the bus brings it back as a signal, which the log line
    // need not follow (seen: 0 queued on a loaded machine).
    var row: [String: DBusValue] = [:]
    try await waitUntil {
      row = try await host.bridges().first ?? [:]
      return row["Queued"] == .uint32(2)
    }
    #expect(row["Connected"] == .boolean(false))
    #expect(row["Queued"] == .uint32(2), "the post and the state wait for the broker")
  }

  @Test func anUnresolvableHostIsLoggedNotFatal() async throws {
    let host = try await BridgedHost(
      ["--bridge", "mqtt://no-such-host.invalid", "--bridge-namespace", "group.example"],
      waitForBridges: false)
    let deadline = ContinuousClock.now + .seconds(15)
    while !host.log.contains("cannot reach the broker") && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(50))
    }
    #expect(
      host.log.contains("bridge mqtt://no-such-host.invalid:1883: cannot reach the broker"),
      "\(host.log)")
    #expect(try await host.state("group.example.x") == 0)
  }
}
