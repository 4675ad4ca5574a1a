import BusTestSupport
import DBus
import Dispatch
import Notify
import Synchronization
import SystemSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Two and three "hosts" (each a private bus with its own notifyd) bridged through one
/// real mosquitto.
@Suite(
  .enabled(if: PrivateBus.isAvailable && MosquittoBroker.isAvailable), .serialized,
  .timeLimit(.minutes(3)))
struct BridgeDeliveryTests {
  let broker: MosquittoBroker

  init() throws { broker = try MosquittoBroker() }

  func host(_ namespaces: [String] = ["group.example"], brokers: [MosquittoBroker]? = nil)
    async throws -> BridgedHost
  {
    var arguments: [String] = []
    let all = brokers ?? [broker]
    // The first broker from the command line, the others from the configuration file.
    arguments += ["--bridge", all[0].url]
    for namespace in namespaces { arguments += ["--bridge-namespace", namespace] }
    if all.count > 1 {
      var text = ""
      for other in all.dropFirst() {
        text += "bridge \(other.url)\n"
        for namespace in namespaces { text += "bridge-namespace \(namespace)\n" }
      }
      let path = other(all[0].directory) + "/notify-\(MosquittoBroker.uniqueSuffix()).conf"
      writeText(path, text)
      arguments += ["--config", path]
    }
    return try await BridgedHost(arguments)
  }

  private func other(_ directory: String) -> String { directory }

  /// A name's count in notifyd's posts rises one at a time on the bus, with bridged and
  /// mediated posts of it made at once.
  ///
  /// notifyd B posts for the broker's messages on one thread and for mediated posts on
  /// another. A post numbered first and sent second looked like a lost post to every
  /// receiver, which then delivers every name once (seen failing: dozens of steps out of
  /// order in each of three runs).
  @Test func bridgedAndMediatedPostsOfOneNameGoOutInTheOrderOfTheirNumbers() async throws {
    let a = try await host()
    let b = try await host()
    let name: NotifyName = "group.example.both"
    let notifyd = try await b.connection.owner(of: "org.notifybus.Notify1").rawValue
    let counts = Mutex<[UInt64]>([])
    let watch = try await b.connection.subscribe(
      .signal(member: NotifyWire.member, path: NotifyWire.path)
    ) { message in
      guard message.sender?.rawValue == notifyd, NotifyWire.postedName(in: message) == name,
        let count = NotifyWire.nameSequence(in: message)
      else { return }
      counts.withLock { $0.append(count) }
    }
    let posts = 1500
    // A failure names the side whose round trip went unanswered, with what both hosts'
    // notifyd and bus logged (the bus logs a message it rejects).
    let logFiles = [
      ("notifyd A", a.logPath), ("bus A", a.busLogPath), ("notifyd B", b.logPath),
      ("bus B", b.busLogPath),
    ]
    async let fromA: Void = {
      for index in 0..<posts {
        do {
          try await a.post(name)
        } catch {
          throw DBusError(.failed, "A's post \(index) (its flush): \(error)")
        }
      }
    }()
    do {
      for index in 0..<posts {
        do {
          _ = try await b.call("Post", [.string(name.rawValue)])
        } catch {
          throw DBusError(.failed, "B's mediated post \(index): \(error)")
        }
      }
      try await fromA
    } catch {
      let logs = logFiles.map { label, path in "\(label): \(readFile(path) ?? "")" }
      Issue.record("\(error)\n\(logs.joined(separator: "\n"))")
      return
    }
    let deadline = ContinuousClock.now + .seconds(60)
    while counts.withLock({ $0.count }) < 2 * posts, ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    await watch.cancel()
    let seen = counts.withLock { $0 }
    #expect(seen.count == 2 * posts)
    let outOfOrder = zip(seen, seen.dropFirst()).filter { $1 != $0 &+ 1 }
    #expect(
      outOfOrder.isEmpty, "\(outOfOrder.count) steps out of order, first \(outOfOrder.prefix(5))")
  }

  @Test func aPostOnAReachesBAndCOnceAndNotATwice() async throws {
    let a = try await host()
    let b = try await host()
    let c = try await host()
    let names = (1...20).map { "group.example.item\($0)" }
    for name in names { try await a.post(try NotifyName(name)) }
    #expect(await b.waitForPosts(names), "B saw \(b.posted)")
    #expect(await c.waitForPosts(names), "C saw \(c.posted)")
    // Time for any echo or duplicate to arrive.
    try await Task.sleep(for: .milliseconds(700))
    for name in names {
      #expect(a.count(name) == 1, "A saw \(name) \(a.count(name)) times")
      #expect(b.count(name) == 1, "B saw \(name) \(b.count(name)) times")
      #expect(c.count(name) == 1, "C saw \(name) \(c.count(name)) times")
    }
    #expect(try await a.counter("Published") == 20)
    #expect(try await a.counter("Received") == 0)
    #expect(try await b.counter("Received") == 20)
    #expect(try await b.counter("Published") == 0, "B does not publish what it received")
  }

  @Test func twoBrokersPerHostStillDeliverOnce() async throws {
    let second = try MosquittoBroker()
    let a = try await host(brokers: [broker, second])
    let b = try await host(brokers: [broker, second])
    let c = try await host(brokers: [second])
    #expect(try await a.bridges().count == 2)
    let names = (1...10).map { "group.example.twice\($0)" }
    for name in names { try await a.post(try NotifyName(name)) }
    #expect(await b.waitForPosts(names))
    #expect(await c.waitForPosts(names))
    _ = try await b.waitForCounter("Duplicates", atLeast: 1)
    try await Task.sleep(for: .milliseconds(700))
    for name in names {
      #expect(a.count(name) == 1)
      #expect(b.count(name) == 1, "B took \(name) once though both brokers carried it")
      #expect(c.count(name) == 1)
    }
    let rows = try await b.bridges()
    let duplicates = rows.compactMap { $0["Duplicates"]?.uint64Value }.reduce(0, +)
    #expect(duplicates == 10, "\(rows)")
  }

  @Test func stateSetOnAIsReadOnBAndOnALaterC() async throws {
    let a = try await host()
    let b = try await host()
    try await a.setState("group.example.level", 42)
    #expect(try await b.waitForState("group.example.level", 42) == 42)
    // A newer set on B wins everywhere.
    try await b.setState("group.example.level", 43)
    #expect(try await a.waitForState("group.example.level", 43) == 43)
    // C joins after both sets: the retained value restores its state.
    let c = try await host()
    #expect(try await c.waitForState("group.example.level", 43) == 43)
    #expect(try await c.counter("Published") == 0, "C had nothing newer to publish")
    // State never posts.
    #expect(c.count("group.example.level") == 0)
  }

  @Test func theNewerStateWinsOverAnOlderRetainedOne() async throws {
    // An old retained value (set time 1 ns after the epoch) is on the broker.
    let old = try broker.publish(["-r", "-t", "notifybus/state/group/example/clock", "-m", "1 7 1"])
    #expect(old.status == 0, "\(old)")
    let a = try await host()
    #expect(try await a.waitForState("group.example.clock", 7) == 7)
    try await a.setState("group.example.clock", 8)
    // An older value sent later does not win, and A puts its newer value back.
    _ = try broker.publish(["-r", "-t", "notifybus/state/group/example/clock", "-m", "1 5 2"])
    try await Task.sleep(for: .milliseconds(500))
    #expect(try await a.state("group.example.clock") == 8)
    let b = try await host()
    #expect(try await b.waitForState("group.example.clock", 8) == 8)
  }

  @Test func namesOutsideTheBridgedNamespacesStayLocal() async throws {
    let watcher = try broker.subscriber(["-t", "notifybus/#", "-v"])
    defer {
      watcher.kill(SIGKILL)
      watcher.wait()
    }
    let a = try await host(["group.example", "user.uid.1000"])
    let b = try await host(["group.example", "user.uid.1000", "user"])
    for name in ["group.examples.x", "group.other", "user.uid.1001.x", "com.example.y"] {
      try await a.post(try NotifyName(name))
    }
    try await a.setState("group.other.level", 5)
    try await a.post("user.uid.1000.mine")
    try await a.post("group.example.marker")
    #expect(await b.waitForPosts(["user.uid.1000.mine", "group.example.marker"]))
    try await Task.sleep(for: .milliseconds(300))
    #expect(b.posted.sorted() == ["group.example.marker", "user.uid.1000.mine"])
    #expect(try await b.state("group.other.level") == 0)
    #expect(try await a.counter("Published") == 2)
    watcher.kill(SIGTERM)
    let (output, _) = watcher.readToEnd(milliseconds: 2000)
    #expect(!output.contains("other"), "\(output)")
    #expect(!output.contains("1001"), "\(output)")
    #expect(output.contains("notifybus/post/group/example/marker 1"), "\(output)")
  }

  @Test func localWatchersAndHandlersSeeBridgedPosts() async throws {
    let a = try await host()
    let b = try await host()
    let center = try await NotifyCenter.connect(to: .address(b.bus.address))
    let fired = PostRecorder()
    let token = try await center.register(
      "group.example.handled", queue: DispatchQueue(label: "handler")
    ) { _ in
      fired.names.withLock { $0.append("group.example.handled") }
    }
    let watch = try Subprocess.spawn(
      Products.path("notify-watch"),
      arguments: ["--bus", b.bus.address.rawValue, "group.example.handled"])
    defer {
      watch.kill(SIGKILL)
      watch.wait()
    }
    try await Task.sleep(for: .milliseconds(500))
    try await a.post("group.example.handled")
    let line = watch.readLine(milliseconds: 10_000)
    #expect(line?.contains("group.example.handled") == true, "\(line ?? "nothing")")
    let deadline = ContinuousClock.now + .seconds(10)
    while fired.names.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    #expect(fired.names.withLock { $0.count } == 1)
    #expect(try center.check(token))
  }

  @Test func mediatedPostsAreBridgedAndBridgedPostsAreMediated() async throws {
    let a = try await host()
    let b = try await host()
    let receiver = try await NotifyCenter.connect(to: .address(b.bus.address), mediated: true)
    let token = try await receiver.registerCheck("group.example.mediated")
    _ = try receiver.check(token)
    let poster = try await NotifyCenter.connect(to: .address(a.bus.address), mediated: true)
    try await poster.postChecked("group.example.mediated")
    #expect(await b.waitForPosts(["group.example.mediated"]))
    try await Task.sleep(for: .milliseconds(200))
    #expect(try receiver.check(token), "a mediated receiver accepts the post notifyd made")
    #expect(a.count("group.example.mediated") == 1)
    #expect(try await a.counter("Published") == 1)
  }
}

func writeText(_ path: String, _ text: String, mode: mode_t = 0o600) {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
  _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
  close(fd)
}

extension MosquittoBroker {
  static func uniqueSuffix() -> String {
    String(UInt64.random(in: 0...UInt64.max), radix: 16)
  }
}
