import BusTestSupport
import DBus
import Notify
import SystemSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The broker goes away, tools that no one here wrote talk to the bridge, rogue clients
/// send garbage, and the broker refuses logins and topics.
@Suite(
  .enabled(if: PrivateBus.isAvailable && MosquittoBroker.isAvailable), .serialized,
  .timeLimit(.minutes(3)))
struct BridgeResilienceTests {
  func host(_ broker: MosquittoBroker, _ extra: [String] = [], wait: Bool = true) async throws
    -> BridgedHost
  {
    try await BridgedHost(
      ["--bridge", broker.url, "--bridge-namespace", "group.example"] + extra,
      waitForBridges: wait)
  }

  /// A configuration file with fast reconnection (the first retry after 1 s, at most 2 s).
  func fastReconnect(_ broker: MosquittoBroker, _ lines: [String] = []) -> String {
    let path = broker.directory + "/notify-\(MosquittoBroker.uniqueSuffix()).conf"
    writeText(
      path,
      (["bridge \(broker.url)", "bridge-namespace group.example", "bridge-reconnect 1 2"] + lines)
        .joined(separator: "\n") + "\n")
    return path
  }

  @Test func afterABrokerRestartDeliveryResumesAndNothingIsLost() async throws {
    let broker = try MosquittoBroker(persistence: true)
    let a = try await BridgedHost(["--config", fastReconnect(broker)])
    let b = try await BridgedHost(["--config", fastReconnect(broker)])
    try await a.post("group.example.before")
    #expect(await b.waitForPosts(["group.example.before"]))
    broker.stop()
    try await a.waitUntilConnected(false)
    // While the broker is away: posts (one name twice) and a state are kept, and notifyd
    // keeps serving its own bus.
    for name in ["group.example.during1", "group.example.during2", "group.example.during1"] {
      try await a.post(try NotifyName(name))
    }
    try await a.setState("group.example.during", 9)
    #expect(try await a.state("group.example.during") == 9)
    _ = try await a.waitForCounter("Queued", atLeast: 3)
    #expect(try await a.counter("Queued") == 3, "two names coalesced and one state")
    #expect(a.log.contains("lost the broker"), "\(a.log)")
    try broker.start()
    try await a.waitUntilConnected()
    try await b.waitUntilConnected()
    #expect(
      await b.waitForPosts(["group.example.during1", "group.example.during2"]),
      "\(b.posted)\nA: \(a.log)\nB: \(b.log)\nbroker: \(broker.log)")
    #expect(try await b.waitForState("group.example.during", 9) == 9)
    try await a.post("group.example.after")
    #expect(await b.waitForPosts(["group.example.after"]))
    #expect(try await a.counter("Queued") == 0)
    #expect(try await a.counter("Dropped") == 0)
    #expect(try await a.counter("Connections") == 2)
  }

  @Test func aBridgeCountsAsConnectedOnlyOnceTheBrokerAnsweredItsSubscriptions() async throws {
    let broker = try MosquittoBroker(persistence: false)
    let a = try await host(broker)
    // B's SUBSCRIBE reaches the broker 1.5 s after its CONNECT was answered; a bridge that
    // said connected at CONNACK would miss A's post, made as soon as B says so.
    let relay = try DelayingRelay(to: broker.port, delay: .milliseconds(1500))
    let b = try await BridgedHost(
      ["--bridge", "mqtt://127.0.0.1:\(relay.port)", "--bridge-namespace", "group.example"],
      waitForBridges: false)
    try await b.waitUntilConnected()
    try await a.post("group.example.first")
    #expect(await b.waitForPosts(["group.example.first"]), "\(b.posted)\nB: \(b.log)")
    _ = relay
  }

  @Test func aBrokerThatLostItsSessionsGetsEveryKnownNamePostedOnce() async throws {
    let broker = try MosquittoBroker(persistence: false)
    let a = try await BridgedHost(["--config", fastReconnect(broker)])
    let b = try await BridgedHost(["--config", fastReconnect(broker)])
    // Both bridges count as connected only once the broker answered their SUBSCRIBEs, so
    // B already listens: this broker keeps nothing for a subscription not yet made.
    try await a.post("group.example.known")
    #expect(await b.waitForPosts(["group.example.known"]))
    broker.stop()
    try await b.waitUntilConnected(false)
    try broker.start()
    try await b.waitUntilConnected()
    // B cannot know what it missed while its session was gone: one post of each bridged name.
    let deadline = ContinuousClock.now + .seconds(10)
    while b.count("group.example.known") < 2 && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    #expect(b.count("group.example.known") == 2, "\(b.posted)")
    #expect(b.log.contains("lost this bridge's session"), "\(b.log)")
    _ = a
  }

  /// The catch-up posts after a lost session are owed until the bus takes them: B's bus
  /// is away when the broker comes back without B's session.
  @Test func theCatchUpPostsAfterALostSessionWaitForTheBus() async throws {
    let broker = try MosquittoBroker(persistence: false)
    let a = try await BridgedHost(["--config", fastReconnect(broker)])
    let b = try await BridgedHost(["--config", fastReconnect(broker)])
    try await a.post("group.example.known")
    #expect(await b.waitForPosts(["group.example.known"]))
    b.bus.kill()
    broker.stop()
    try broker.start()
    let refused = await waitUntil(timeout: .seconds(20)) {
      b.log.contains("could not post group.example.known on the bus")
    }
    #expect(refused, "\(b.log)")
    try b.bus.start()
    let posted = await waitUntil(timeout: .seconds(20)) {
      b.log.contains("posted the 1 bridged names owed since the broker lost the session")
    }
    #expect(posted, "\(b.log)")
    _ = a
  }

  @Test func postsMadeWhileANotifydWasDownReachItWhenItComesBack() async throws {
    let broker = try MosquittoBroker()
    let a = try await host(broker)
    let b = try await host(broker)
    try await b.stop()
    // The broker keeps B's session (same client identifier, session expiry) and queues
    // the posts for it.
    try await a.post("group.example.while-away")
    try await Task.sleep(for: .milliseconds(300))
    try await b.start()
    #expect(await b.waitForPosts(["group.example.while-away"]), "\(b.log)")
    try await Task.sleep(for: .milliseconds(300))
    #expect(b.count("group.example.while-away") == 1)
  }

  @Test func aFullOutageQueueDropsAndSaysSo() async throws {
    let broker = try MosquittoBroker()
    let a = try await BridgedHost(["--config", fastReconnect(broker, ["bridge-queue 2"])])
    broker.stop()
    try await a.waitUntilConnected(false)
    for index in 1...5 { try await a.post(try NotifyName("group.example.q\(index)")) }
    #expect(try await a.waitForCounter("Dropped", atLeast: 3) == 3)
    #expect(try await a.counter("Queued") == 2)
    #expect(a.log.contains("2 names are waiting (bridge-queue)"), "\(a.log)")
  }

  @Test func mosquittoPubPostsAndSetsStateAndMosquittoSubWatches() async throws {
    let broker = try MosquittoBroker()
    let b = try await host(broker)
    // Post: an empty payload (or "1") on the name's post topic.
    let posted = try broker.publish(["-t", "notifybus/post/group/example/from-tool", "-n"])
    #expect(posted.status == 0, "\(posted)")
    #expect(await b.waitForPosts(["group.example.from-tool"]))
    let escaped = try broker.publish(["-t", "notifybus/post/group/example/a%2Fb", "-m", "1"])
    #expect(escaped.status == 0)
    #expect(await b.waitForPosts(["group.example.a/b"]))
    // State: "1 STATE", retained.
    let set = try broker.publish(["-r", "-t", "notifybus/state/group/example/volume", "-m", "1 11"])
    #expect(set.status == 0)
    #expect(try await b.waitForState("group.example.volume", 11) == 11)
    // Watching: what a post and a state of B look like to mosquitto_sub.
    let watcher = try broker.subscriber([
      "-t", "notifybus/post/group/example/to-tool", "-t", "notifybus/state/group/example/watched",
      "-v", "-C", "2",
    ])
    defer {
      watcher.kill(SIGKILL)
      watcher.wait()
    }
    try await Task.sleep(for: .milliseconds(300))
    let before = try await b.counter("Published")
    try await b.post("group.example.to-tool")
    try await b.setState("group.example.watched", 5)
    let first = watcher.readLine(milliseconds: 10_000) ?? ""
    let second = watcher.readLine(milliseconds: 10_000) ?? ""
    let lines = [first, second].sorted()
    #expect(lines.count == 2)
    #expect(lines.contains("notifybus/post/group/example/to-tool 1"), "\(lines)")
    #expect(
      lines.contains { $0.hasPrefix("notifybus/state/group/example/watched 1 5 ") },
      "\(lines)")
    #expect(try await b.counter("Published") == before + 2)
  }

  @Test func malformedPublishesAreDroppedCountedAndSurvived() async throws {
    let broker = try MosquittoBroker()
    let b = try await host(broker)
    let huge = broker.directory + "/huge"
    writeText(huge, String(repeating: "x", count: 300_000))
    let rogue: [[String]] = [
      ["-t", "notifybus/post/group/example/x", "-m", "hello"],
      ["-t", "notifybus/post/group/example/x", "-m", "2"],
      ["-t", "notifybus/state/group/example/x", "-m", "1 twelve"],
      ["-t", "notifybus/state/group/example/x", "-m", "1 99999999999999999999"],
      ["-t", "notifybus/post/group/example/x", "-f", huge],
      ["-t", "notifybus/post/group/example/%zz", "-n"],
      ["-t", "notifybus/post/group/example/a.b", "-n"],
      [
        "-t", "notifybus/post/group/example/x", "-n", "-D", "publish", "user-property",
        "notifybus-origin", "not-hex",
      ],
      // The origin twice (among properties of other names): each of the bridge's own
      // properties counts, however many others come between.
      [
        "-t", "notifybus/post/group/example/x", "-n",
        "-D", "publish", "user-property", "notifybus-origin", String(repeating: "a", count: 32),
        "-D", "publish", "user-property", "other", "x",
        "-D", "publish", "user-property", "notifybus-origin", String(repeating: "a", count: 32),
        "-D", "publish", "user-property", "notifybus-sequence", "1",
      ],
    ]
    for arguments in rogue {
      let result = try broker.publish(arguments)
      #expect(result.status == 0, "\(arguments): \(result)")
    }
    #expect(
      try await b.waitForCounter("Malformed", atLeast: UInt64(rogue.count)) == UInt64(rogue.count))
    #expect(b.isRunning)
    #expect(b.count("group.example.x") == 0)
    #expect(try await b.state("group.example.x") == 0)
    #expect(
      b.log.contains(
        "dropped a publish on 'notifybus/post/group/example/x': the payload is 300000 bytes"),
      "\(b.log)")
    #expect(b.log.contains("a '%' not followed by two hex digits"), "\(b.log)")
    // The bridge still works, and a stamp after many properties of other names is read.
    _ = try broker.publish(["-t", "notifybus/post/group/example/fine", "-n"])
    #expect(await b.waitForPosts(["group.example.fine"]))
    let others = (0..<70).flatMap { ["-D", "publish", "user-property", "other\($0)", "x"] }
    let stamped =
      ["-t", "notifybus/post/group/example/stamped", "-n"] + others + [
        "-D", "publish", "user-property", "notifybus-origin", String(repeating: "b", count: 32),
        "-D", "publish", "user-property", "notifybus-sequence", "7",
      ]
    _ = try broker.publish(stamped)
    #expect(await b.waitForPosts(["group.example.stamped"]))
    // The same stamp again is a duplicate: the stamp was read, not ignored.
    _ = try broker.publish(stamped)
    #expect(try await b.waitForCounter("Duplicates", atLeast: 1) == 1)
    #expect(b.count("group.example.stamped") == 1)
  }

  /// The receiving client hands on the last message's topic, origin and payload again
  /// when the next one repeats them: each must still be read anew when it changes.
  @Test func aChangedTopicOriginOrPayloadIsReadAnewAfterRepeats() async throws {
    let broker = try MosquittoBroker()
    let b = try await host(broker)
    func stamp(_ origin: Character, _ sequence: Int) -> [String] {
      [
        "-D", "publish", "user-property", "notifybus-origin", String(repeating: origin, count: 32),
        "-D", "publish", "user-property", "notifybus-sequence", String(sequence),
      ]
    }
    func seen(_ name: String, _ count: Int) async -> Bool {
      let deadline = ContinuousClock.now + .seconds(20)
      while b.count(name) < count && ContinuousClock.now < deadline {
        try? await Task.sleep(for: .milliseconds(20))
      }
      return b.count(name) == count
    }
    let x = ["-t", "notifybus/post/group/example/x", "-m", "1"]
    #expect(try broker.publish(x + stamp("a", 1)).status == 0)
    #expect(await seen("group.example.x", 1))
    // The same origin and sequence: a duplicate. Another origin, same sequence: new.
    #expect(try broker.publish(x + stamp("a", 1)).status == 0)
    #expect(try await b.waitForCounter("Duplicates", atLeast: 1) == 1)
    #expect(try broker.publish(x + stamp("b", 1)).status == 0)
    #expect(await seen("group.example.x", 2))
    // Another topic from the same origin.
    let y = ["-t", "notifybus/post/group/example/y", "-m", "1"]
    #expect(try broker.publish(y + stamp("b", 2)).status == 0)
    #expect(await seen("group.example.y", 1))
    // Payloads that change on one topic, then the post payload again.
    let state = ["-t", "notifybus/state/group/example/x"]
    #expect(try broker.publish(state + ["-m", "1 5 1000"] + stamp("b", 3)).status == 0)
    #expect(try await b.waitForState("group.example.x", 5) == 5)
    #expect(try broker.publish(state + ["-m", "1 7 2000"] + stamp("b", 4)).status == 0)
    #expect(try await b.waitForState("group.example.x", 7) == 7)
    #expect(try broker.publish(y + stamp("b", 5)).status == 0)
    #expect(await seen("group.example.y", 2))
    #expect(b.count("group.example.x") == 2)
    #expect(try await b.counter("Duplicates") == 1)
    #expect(try await b.counter("Malformed") == 0)
  }

  @Test func aRefusedLoginIsLoggedAndNotifydKeepsServing() async throws {
    let broker = try MosquittoBroker(users: ["alice": "right"])
    let password = broker.directory + "/wrong"
    writeText(password, "wrong\n")
    let a = try await host(
      broker, ["--bridge-user", "alice", "--bridge-password-file", password], wait: false)
    let deadline = ContinuousClock.now + .seconds(20)
    while !a.log.contains("refused the connection") && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(50))
    }
    #expect(a.log.contains("the broker refused the connection: "), "\(a.log)")
    #expect(a.log.contains("check bridge-user 'alice' and bridge-password-file"), "\(a.log)")
    try await a.setState("group.example.local", 3)
    #expect(try await a.state("group.example.local") == 3)
    let row = try #require(try await a.bridges().first)
    #expect(row["Connected"]?.boolValue == false)
    #expect(row["LastError"]?.stringValue?.contains("refused") == true)
  }

  @Test func theBrokersACLRefusesWhatItShouldWithAClearLog() async throws {
    let acl = """
      user alice
      topic readwrite notifybus/post/group/example/#
      topic readwrite notifybus/state/group/example/#
      topic read notifybus/post/group/readonly/#
      topic read notifybus/state/group/readonly/#

      """
    let broker = try MosquittoBroker(users: ["alice": "s3cret", "bob": "other"], acl: acl)
    let password = broker.directory + "/alice"
    writeText(password, "s3cret\n")
    let configuration = broker.directory + "/notify.conf"
    writeText(
      configuration,
      """
      bridge \(broker.url)
      bridge-namespace group.example group.readonly
      bridge-user alice
      bridge-password-file alice

      """)
    let a = try await BridgedHost(["--config", configuration])
    let b = try await BridgedHost(["--config", configuration])
    try await a.post("group.readonly.attempt")
    try await a.post("group.example.allowed")
    #expect(await b.waitForPosts(["group.example.allowed"]))
    #expect(try await a.waitForCounter("Refused", atLeast: 1) == 1)
    #expect(
      a.log.contains(
        "the broker refused to take notifybus/post/group/readonly/attempt: Not authorized"),
      "\(a.log)")
    try await Task.sleep(for: .milliseconds(300))
    #expect(b.count("group.readonly.attempt") == 0)
    #expect(try await a.counter("Dropped") == 1)
  }
}
