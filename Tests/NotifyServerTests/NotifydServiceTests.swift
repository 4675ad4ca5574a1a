import BusTestSupport
import DBus
import Notify
import NotifyServer
import Synchronization
import SystemSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct NotifydServiceTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  var statePath: String { bus.directory + "/state/notifyd.state" }

  func center(mediated: Bool = false) async throws -> NotifyCenter {
    try await NotifyCenter.connect(to: .address(bus.address), mediated: mediated)
  }

  func connection() async throws -> BusConnection {
    try await BusConnection.connect(to: .address(bus.address))
  }

  @Test func stateIsSharedAndSettingItDoesNotPost() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let writer = try await center()
    let reader = try await center()
    let name: NotifyName = "group.example.count"
    #expect(try await reader.state(of: name) == 0)
    let token = try await reader.registerCheck(name)
    #expect(try reader.check(token))
    try await writer.setState(0xDEAD_BEEF_0000_0001, for: name)
    #expect(try await reader.state(of: name) == 0xDEAD_BEEF_0000_0001)
    try await writer.synchronize()
    try await settle()
    #expect(try !reader.check(token), "setting state must not post")
    _ = daemon
  }

  @Test func servedIntrospectionEqualsTheProtocolFile() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let connection = try await connection()
    let reply = try await connection.call(
      .methodCall(
        destination: "org.notifybus.Notify1", path: "/org/notifybus/Notify1",
        interface: "org.freedesktop.DBus.Introspectable", member: "Introspect"))
    let root = Repository.root
    let file = try #require(readFile(root + "/Protocol/notifyd-interface.xml"))
    #expect(reply.body.first?.stringValue == file)
    #expect(NotifydInterface.introspectionDocument == file)
    await connection.close()
    _ = daemon
  }

  /// `busctl tree` and `gdbus introspect --recurse` walk the tree from `/`, so every
  /// parent of the object must list its child node.
  @Test func toolsThatWalkTheTreeFindTheObject() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let gdbus = try await Products.runCommandAsync(
      "gdbus",
      [
        "introspect", "--address", bus.address.rawValue, "--dest", "org.notifybus.Notify1",
        "--object-path", "/", "--recurse", "--only-properties",
      ])
    #expect(gdbus.status == 0, "\(gdbus)")
    #expect(gdbus.output.contains("node /org/notifybus/Notify1 {"), "\(gdbus)")
    // busctl comes with systemd (Scripts/bootstrap).
    let busctl = try await Products.runCommandAsync(
      "busctl", ["--address", bus.address.rawValue, "tree", "--list", "org.notifybus.Notify1"])
    #expect(busctl.status == 0, "\(busctl)")
    #expect(
      busctl.output.split(separator: "\n") == [
        "/", "/org", "/org/notifybus", "/org/notifybus/Notify1",
      ], "\(busctl)")
    _ = daemon
  }

  @Test func malformedCallsGetErrorsAndTheDaemonKeepsServing() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let connection = try await connection()
    let cases: [(Message, DBusError.Name, String)] = [
      (notifydCall("GetState", [.int32(3)]), .invalidArgs, "GetState takes (s name)"),
      (notifydCall("SetState", [.string("a.b")]), .invalidArgs, "signature 'st'"),
      (notifydCall("SetState", [.string(""), .uint64(1)]), .invalidArgs, "it is empty"),
      (
        notifydCall("SetState", [.string(String(repeating: "n", count: 600)), .uint64(1)]),
        .invalidArgs, "the limit is 511"
      ),
      (notifydCall("Post", [.string("self.local")]), .invalidArgs, "self. name"),
      (notifydCall("ListNames", [.string("x")]), .invalidArgs, "no arguments"),
      (notifydCall("Explode"), .unknownMethod, "no method 'Explode'"),
    ]
    for (call, name, fragment) in cases {
      let error = await #expect(throws: DBusError.self) { _ = try await connection.call(call) }
      #expect(error?.name == name, "\(call.member!): \(error?.description ?? "")")
      #expect(error?.message.contains(fragment) == true, "\(error?.message ?? "")")
    }
    _ = try await connection.call(notifydCall("SetState", [.string("still.alive"), .uint64(5)]))
    let reply = try await connection.call(notifydCall("GetState", [.string("still.alive")]))
    #expect(reply.body == [.uint64(5)])
    let statistics = try await connection.call(notifydCall("GetStatistics"))
    #expect(statistics.body.first?.stringDictionary?["InvalidCalls"] == .uint64(7))
    await connection.close()
    #expect(daemon.process.wait(milliseconds: 0) == nil, "notifyd must still run")
  }

  @Test func listNamesCountsPostsSeenOnTheBus() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let poster = try await center()
    try await poster.setState(3, for: "b.with.state")
    for _ in 0..<3 { try poster.post("a.posted") }
    try await poster.synchronize()
    let connection = try await connection()
    var rows: [DBusValue] = []
    try await waitUntil {
      let reply = try await connection.call(notifydCall("ListNames"))
      guard case .array(_, let values)? = reply.body.first else { return true }
      rows = values
      if rows.count == 2, case .structure(let first) = rows[0], first[2] == .uint64(3) {
        return true
      }
      return false
    }
    #expect(
      rows == [
        .structure([.string("a.posted"), .uint64(0), .uint64(3)]),
        .structure([.string("b.with.state"), .uint64(3), .uint64(0)]),
      ])
    await connection.close()
    _ = daemon
  }

  @Test func describeNamesGivesTheTimesOfTheLastChanges() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let before = NotifyServer.realtimeNanoseconds()
    let poster = try await center()
    try await poster.setState(3, for: "b.with.state")
    try poster.post("a.posted")
    try await poster.synchronize()
    let connection = try await connection()
    var rows: [DBusValue] = []
    let deadline = ContinuousClock.now + .seconds(10)
    repeat {
      let reply = try await connection.call(notifydCall("DescribeNames"))
      #expect(reply.signature.rawValue == "a(stttt)")
      guard case .array(_, let values)? = reply.body.first else { break }
      rows = values
      if rows.count == 2 { break }
      try await Task.sleep(for: .milliseconds(10))
    } while ContinuousClock.now < deadline
    let after = NotifyServer.realtimeNanoseconds()
    guard rows.count == 2, case .structure(let posted) = rows[0],
      case .structure(let withState) = rows[1]
    else {
      Issue.record("unexpected rows \(rows)")
      return
    }
    #expect(posted[0] == .string("a.posted") && posted[1] == .uint64(0))
    #expect(posted[2] == .uint64(0) && posted[3] == .uint64(1))
    #expect(posted[4].uint64Value.map { (before...after).contains($0) } == true, "\(posted)")
    #expect(withState[0] == .string("b.with.state") && withState[1] == .uint64(3))
    #expect(withState[2].uint64Value.map { (before...after).contains($0) } == true)
    #expect(withState[3] == .uint64(0) && withState[4] == .uint64(0))
    await connection.close()
    _ = daemon
  }

  @Test func aSecondNotifydFailsClearlyWhenTheNameIsTaken() async throws {
    let first = try await NotifydProcess(bus: bus, ["--no-persist"])
    let second = try await NotifydProcess(bus: bus, ["--no-persist"], waitForName: false)
    #expect(second.process.wait(milliseconds: 10_000) == .exited(1))
    #expect(
      second.log.contains("Error: org.notifybus.Notify1 is already owned by :1."), "\(second.log)")
    #expect(second.log.contains("(pid \(first.process.pid))"))
  }

  @Test func sigtermWritesTheStateFileAndARestartKeepsIt() async throws {
    let first = try await NotifydProcess(bus: bus, ["--state-file", statePath])
    let client = try await center()
    try await client.setState(42, for: "group.example.kept")
    try await client.setState(7, for: "odd name%")
    #expect(first.terminate() == .exited(0))
    #expect(first.log.contains("stopping on SIGTERM"))
    let text = try #require(readFile(statePath))
    #expect(text.hasPrefix("notifyd-state 2\ngroup.example.kept 42 "), "\(text)")
    #expect(text.contains("\nodd%20name%25 7 "))
    try await NotifydProcess.waitForOwner(bus, present: false)
    let second = try await NotifydProcess(bus: bus, ["--state-file", statePath])
    let reader = try await center()
    #expect(try await reader.state(of: "group.example.kept") == 42)
    #expect(try await reader.state(of: "odd name%") == 7)
    #expect(second.log.contains("loaded the state of 2 names from \(statePath)"))
  }

  @Test func aCorruptStateFileIsMovedAsideNamingFileAndLine() async throws {
    mkdir(bus.directory + "/state", 0o700)
    writeFile(statePath, "notifyd-state 1\ngood 1 2\nbad line\n")
    let daemon = try await NotifydProcess(bus: bus, ["--state-file", statePath])
    #expect(
      daemon.log.contains("ignoring the corrupt state file \(statePath):3: "), "\(daemon.log)")
    #expect(readFile(statePath) == nil)
    let listing = try await Products.runCommandAsync("ls", [bus.directory + "/state"]).output
    #expect(listing.contains("notifyd.state.corrupt-"), "\(listing)")
    let client = try await center()
    #expect(try await client.state(of: "good") == 0, "starts empty")
  }

  @Test func aClientRestoresItsStateAfterNotifydRestartsWithoutAFile() async throws {
    let first = try await NotifydProcess(bus: bus, ["--no-persist"])
    let client = try await center()
    try await client.setState(99, for: "group.example.restored")
    first.process.kill(SIGKILL)
    first.process.wait()
    try await NotifydProcess.waitForOwner(bus, present: false)
    let second = try await NotifydProcess(bus: bus, ["--no-persist"])
    let reader = try await center()
    var value: UInt64 = 0
    try await waitUntil {
      value = try await reader.state(of: "group.example.restored")
      return value == 99
    }
    #expect(value == 99, "the client's RestoreState must reach the new notifyd")
    _ = second
  }

  @Test func notifydOutlivesABusRestartWithItsState() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let writer = try await center()
    try await writer.setState(11, for: "group.example.survivor")
    await writer.close()
    bus.kill()
    try bus.start()
    try await NotifydProcess.waitForOwner(bus)
    let reader = try await center()
    #expect(try await reader.state(of: "group.example.survivor") == 11)
    #expect(daemon.process.wait(milliseconds: 0) == nil)
  }

  /// Calls of one connection are answered in order even while notifyd asks the bus who the
  /// caller is (a rule governs the name, so the first call waits for the lookup).
  @Test func pipelinedCallsOfOneCallerKeepTheirOrder() async throws {
    let configuration = bus.directory + "/notify.conf"
    writeFile(configuration, "reserve ordered. 0 0 rwrwrw\n")
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist", "--config", configuration])
    // A blocking connection keeps the client's order certain: one thread, one queue.
    let pipeline = try OneShotConnection(to: .address(bus.address))
    for value in 1...300 {
      var call = notifydCall("SetState", [.string("ordered.value"), .uint64(UInt64(value))])
      call.noReplyExpected = true
      try pipeline.send(call)
    }
    let reply = try pipeline.call(notifydCall("GetState", [.string("ordered.value")]))
    #expect(reply.body == [.uint64(300)], "\(daemon.log)")
    let connection = try await connection()
    let statistics = try await connection.call(notifydCall("GetStatistics"))
    let values = try #require(statistics.body.first?.stringDictionary)
    #expect(values["CallerLookups"] == .uint64(1))
    #expect(values["StateSets"] == .uint64(300))
    await connection.close()
    _ = daemon
  }

  @Test func sighupReadsTheConfigurationAgainAndKeepsTheRulesWhenItIsBad() async throws {
    let configuration = bus.directory + "/notify.conf"
    writeFile(configuration, "reserve a. 0 0 rwrwrw\n")
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist", "--config", configuration])
    let connection = try await connection()
    func rules() async throws -> DBusValue? {
      let statistics = try await connection.call(notifydCall("GetStatistics"))
      return statistics.body.first?.stringDictionary?["AccessRules"]
    }
    #expect(try await rules() == .uint32(1))
    writeFile(configuration, "reserve a. 0 0 rwrwrw\nreserve b. 0 0 rwr-r-\n")
    daemon.process.kill(SIGHUP)
    #expect(await eventually { daemon.log.contains("2 rules in force") }, "\(daemon.log)")
    #expect(try await rules() == .uint32(2))
    writeFile(configuration, "reserve a. 0 0 rwrwrw\nreserve b 0 0 rwx---\n")
    daemon.process.kill(SIGHUP)
    #expect(
      await eventually {
        daemon.log.contains("SIGHUP: keeping the 2 rules in force: bad configuration: ")
      }, "\(daemon.log)")
    #expect(try await rules() == .uint32(2))
    await connection.close()
  }

  @Test func sighupWithoutAConfigurationIsLoggedAndNotifydStays() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    daemon.process.kill(SIGHUP)
    #expect(await eventually { daemon.log.contains("SIGHUP: there is no --config") })
    let connection = try await connection()
    _ = try await connection.call(notifydCall("GetStatistics"))
    await connection.close()
  }

  /// SIGUSR1 and SIGUSR2 write a status dump to the log, as Darwin's notifyd writes one
  /// to a file, and notifyd goes on serving (issue 11, item 15: SIGUSR1 ended it).
  @Test func sigusr1AndSigusr2WriteAStatusDumpAndNotifydStays() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let connection = try await connection()
    _ = try await connection.call(
      notifydCall("SetState", [.string("group.example.odd name"), .uint64(42)]))
    daemon.process.kill(SIGUSR1)
    #expect(await eventually { daemon.log.contains("status: end") }, "\(daemon.log)")
    let short = daemon.log
    #expect(short.contains("notifyd: status on SIGUSR1: pid \(daemon.process.pid), "), "\(short)")
    #expect(short.contains("notifyd: status: 1 names (1 with a state) of at most 100000"))
    #expect(short.contains(" StateSets 1 "), "\(short)")
    #expect(!short.contains("group.example.odd"))
    daemon.process.kill(SIGUSR2)
    #expect(
      await eventually { daemon.log.ranges(of: "status: end").count == 2 },
      "\(daemon.log)")
    #expect(daemon.log.contains("notifyd: status on SIGUSR2: pid "))
    #expect(
      daemon.log.contains("notifyd: status: name group.example.odd%20name state 42 set "),
      "\(daemon.log)")
    let reply = try await connection.call(
      notifydCall("GetState", [.string("group.example.odd name")]))
    #expect(reply.body == [.uint64(42)])
    await connection.close()
    #expect(daemon.terminate() == .exited(0), "\(daemon.log)")
  }

  /// Whether `condition` holds within five seconds.
  func eventually(_ condition: () -> Bool) async -> Bool {
    await waitUntil(timeout: .seconds(5), every: .milliseconds(20), condition)
  }

  @Test func restoreStateKeepsTheNewerValue() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let connection = try await connection()
    _ = try await connection.call(notifydCall("SetState", [.string("n.x"), .uint64(1)]))
    let old = try await connection.call(
      notifydCall("RestoreState", [.string("n.x"), .uint64(2), .uint64(1)]))
    #expect(old.body == [.boolean(false)])
    #expect(
      try await connection.call(notifydCall("GetState", [.string("n.x")])).body == [.uint64(1)])
    let newer = try await connection.call(
      notifydCall("RestoreState", [.string("n.x"), .uint64(3), .uint64(.max)]))
    #expect(newer.body == [.boolean(true)])
    #expect(
      try await connection.call(notifydCall("GetState", [.string("n.x")])).body == [.uint64(3)])
    let fresh = try await connection.call(
      notifydCall("RestoreState", [.string("n.new"), .uint64(4), .uint64(1)]))
    #expect(fresh.body == [.boolean(true)])
    await connection.close()
    _ = daemon
  }

  @Test func activationStartsNotifydOnTheFirstGetState() async throws {
    let install = try await Products.runAsync(
      "notifyd", ["--install-service", "--service-dir", bus.serviceDirectory, "--no-persist"])
    #expect(install.status == 0, "\(install)")
    let servicePath = bus.serviceDirectory + "/org.notifybus.Notify1.service"
    #expect(install.output == servicePath + "\n")
    let text = try #require(readFile(servicePath))
    #expect(
      text
        == "[D-BUS Service]\nName=org.notifybus.Notify1\nExec=\(Products.path("notifyd")) --no-persist\n"
    )
    let connection = try await connection()
    await #expect(throws: DBusError.self) {
      _ = try await connection.owner(of: "org.notifybus.Notify1")
    }
    let client = try await center()
    #expect(try await client.state(of: "group.example.activated") == 0)
    try await client.setState(5, for: "group.example.activated")
    #expect(try await client.state(of: "group.example.activated") == 5)
    let owner = try await connection.owner(of: "org.notifybus.Notify1")
    let pid = try #require(try await connection.credentials(of: owner).processID)
    kill(pid_t(pid), SIGKILL)
    await connection.close()
  }

  @Test func hundredConcurrentClientsLoseNoUpdate() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let clients = try await withThrowingTaskGroup(of: NotifyCenter.self) { group in
      for _ in 0..<100 { group.addTask { try await center() } }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    // Each client sets its own name, all at once, then every client reads every name.
    try await withThrowingTaskGroup(of: Void.self) { group in
      for (index, client) in clients.enumerated() {
        group.addTask {
          try await client.setState(UInt64(index) + 1000, for: NotifyName("n.\(index)"))
        }
      }
      try await group.waitForAll()
    }
    let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
      for client in clients {
        group.addTask {
          var wrong = 0
          for index in 0..<100
          where try await client.state(of: NotifyName("n.\(index)")) != UInt64(index) + 1000 {
            wrong += 1
          }
          return wrong
        }
      }
      return try await group.reduce(0, +)
    }
    #expect(mismatches == 0)
    // Concurrent increments through distinct names: 100 clients bump 10 counters each 5
    // times, each counter owned by one client at a time (read, write, next).
    try await withThrowingTaskGroup(of: Void.self) { group in
      for (index, client) in clients.enumerated() {
        group.addTask {
          for round in 0..<5 {
            let name = try NotifyName("counter.\(index).\(round % 2)")
            let value = try await client.state(of: name)
            try await client.setState(value + 1, for: name)
          }
        }
      }
      try await group.waitForAll()
    }
    let reader = clients[0]
    var total: UInt64 = 0
    for index in 0..<100 {
      total += try await reader.state(of: NotifyName("counter.\(index).0"))
      total += try await reader.state(of: NotifyName("counter.\(index).1"))
    }
    #expect(total == 500)
    for client in clients { await client.close() }
    _ = daemon
  }
}

/// `org.notifybus.notifyd.version`, Darwin's `com.apple.system.notify.ipc_version`.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct NotifydVersionNameTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  @Test func theVersionNameReportsPidAndInterfaceVersionAndOnlyNotifydSetsIt() async throws {
    let notifyd = try await NotifydProcess(bus: bus, ["--no-persist"])
    let center = try await NotifyCenter.connect(to: .address(bus.address))
    let version = try await center.serverVersion()
    #expect(version.version == 1)
    #expect(version.processID == notifyd.process.pid)
    do {
      try await center.setState(5, for: NotifyWire.serverVersionName)
      Issue.record("SetState of the version name succeeded")
    } catch {
      #expect(error.status == .notAuthorized)
    }
    #expect(try await center.serverVersion().processID == notifyd.process.pid)
  }
}
