import BusTestSupport
import DBus
import Glibc
import Synchronization
import Testing

/// Collects messages delivered on a connection's thread, for tests to wait on.
final class Inbox: Sendable {
  private let messages = Mutex<[Message]>([])

  func append(_ message: Message) { messages.withLock { $0.append(message) } }

  var all: [Message] { messages.withLock { $0 } }

  /// Waits until at least `count` messages arrived, or `seconds` pass.
  func wait(for count: Int, seconds: Double = 10) async -> [Message] {
    var current: [Message] = []
    await waitUntil(timeout: .milliseconds(Int(seconds * 1000))) {
      current = all
      return current.count >= count
    }
    return current
  }
}

final class DroppedCount: Sendable {
  let value = Atomic<Int>(0)
}

let testPath: ObjectPath = "/org/notifybus/Test"
let testInterface: InterfaceName = "org.notifybus.Test"

func tick(_ tag: String, _ sequence: UInt64) -> Message {
  .signal(
    path: testPath, interface: testInterface, member: "Tick",
    body: [.string(tag), .uint64(sequence)])
}

@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
struct ConnectionTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  func connect() async throws -> BusConnection {
    try await BusConnection.connect(to: .address(bus.address))
  }

  @Test func connectsAndGetsAUniqueName() async throws {
    let connection = try await connect()
    let name = try #require(await connection.uniqueName)
    #expect(name.isUnique)
    #expect(await connection.state == .connected(uniqueName: name))
    await connection.close()
    #expect(await connection.state == .closed)
  }

  @Test func twoConnectionsExchangeSignals() async throws {
    let sender = try await connect()
    let receiver = try await connect()
    let inbox = Inbox()
    let rule = MatchRule.signal(interface: testInterface, member: "Tick", arg0: "hello")
    let subscription = try await receiver.subscribe(rule) { inbox.append($0) }
    try sender.send(tick("other", 0))
    try sender.send(tick("hello", 1))
    let received = await inbox.wait(for: 1)
    #expect(received.count == 1)
    let message = try #require(received.first)
    #expect(message.body == [.string("hello"), .uint64(1)])
    #expect(message.sender == (await sender.uniqueName))
    #expect(message.path == testPath)
    await subscription.cancel()
    await sender.close()
    await receiver.close()
  }

  /// A received signal's arguments are read into storage that the next signal reuses once
  /// the handlers have let go: the signals a handler keeps (every third here, to a task
  /// and an array) keep exactly their own arguments, of every count and kind, while the
  /// ones in between, dropped at once, are read into the storage again.
  @Test func keptSignalsKeepTheirArgumentsWhileDroppedOnesReuseTheStorage() async throws {
    let sender = try await connect()
    let receiver = try await connect()
    let kept = Inbox()
    let dropped = DroppedCount()
    func body(_ index: Int) -> [DBusValue] {
      let tag = DBusValue.string("signal \(index) with a string too long to be stored inline")
      return Array(
        [
          tag, .uint64(UInt64(index)), .array(elementType: "s", [.string("in \(index)")]),
          .bytes(Array(repeating: UInt8(index & 0xFF), count: index % 5)),
          .variant(.int32(Int32(index))), .boolean(index.isMultiple(of: 2)),
        ].prefix(index % 7))
    }
    let subscription = try await receiver.subscribe(
      .signal(interface: testInterface, member: "Kept")
    ) { message in
      guard case .uint64(let index)? = message.body.dropFirst().first,
        index.isMultiple(of: 3)
      else {
        dropped.value.add(1, ordering: .relaxed)
        return
      }
      kept.append(message)
      Task { kept.append(message) }
    }
    let count = 300
    for index in 0..<count {
      // Signals of fewer than two arguments carry no index: sent with one of 2 or more.
      let arguments = index % 7 < 2 ? [.string("no index"), .uint64(1)] : body(index)
      try sender.send(
        .signal(path: testPath, interface: testInterface, member: "Kept", body: arguments))
    }
    let expected = (0..<count).filter { $0 % 7 >= 2 && $0.isMultiple(of: 3) }
    let received = await kept.wait(for: 2 * expected.count)
    var byIndex: [UInt64: [[DBusValue]]] = [:]
    for message in received {
      if case .uint64(let index)? = message.body.dropFirst().first {
        byIndex[index, default: []].append(message.body)
      }
    }
    #expect(byIndex.count == expected.count)
    for index in expected {
      #expect(byIndex[UInt64(index)] == [body(index), body(index)], "signal \(index)")
    }
    await waitUntil(timeout: .seconds(10)) {
      dropped.value.load(ordering: .relaxed) >= count - expected.count
    }
    #expect(dropped.value.load(ordering: .relaxed) == count - expected.count)
    await subscription.cancel()
    await sender.close()
    await receiver.close()
  }

  @Test func afterDispatchRunsOnceABurstHasBeenHandled() async throws {
    let sender = try await connect()
    let receiver = try await connect()
    // What the handler saw, in order: each signal's sequence, and -1 for each time the
    // work it queued with afterDispatch ran.
    let events = Mutex<(seen: [Int], flushQueued: Bool)>(([], false))
    let subscription = try await receiver.subscribe(.signal(interface: testInterface)) {
      message in
      let first = events.withLock { events in
        events.seen.append(Int(message.body[1].uint64Value ?? 0))
        defer { events.flushQueued = true }
        return !events.flushQueued
      }
      if first {
        receiver.afterDispatch {
          events.withLock { events in
            events.seen.append(-1)
            events.flushQueued = false
          }
        }
      }
    }
    let count = 500
    for sequence in 0..<count { try sender.send(tick("burst", UInt64(sequence))) }
    await waitUntil { events.withLock { $0.seen.filter { $0 >= 0 }.count == count } }
    await waitUntil { events.withLock { !$0.flushQueued } }
    let seen = events.withLock { $0.seen }
    #expect(seen.filter { $0 >= 0 } == Array(0..<count))
    // Every batch ends with the work it queued, which runs before the next batch starts.
    #expect(seen.last == -1)
    #expect(seen.first != -1)
    #expect(!zip(seen, seen.dropFirst()).contains { $0 == -1 && $1 == -1 })
    // From outside a handler it runs too.
    let ran = Mutex(false)
    receiver.afterDispatch { ran.withLock { $0 = true } }
    await waitUntil { ran.withLock { $0 } }
    #expect(ran.withLock { $0 })
    await subscription.cancel()
    await sender.close()
    await receiver.close()
  }

  @Test func signalSequenceDeliversAndEnds() async throws {
    let sender = try await connect()
    let receiver = try await connect()
    let signals = try await receiver.signals(matching: .signal(interface: testInterface))
    for sequence in 0..<3 { try sender.send(tick("s", UInt64(sequence))) }
    var seen: [UInt64] = []
    for await message in signals {
      seen.append(message.body[1].uint64Value ?? 99)
      if seen.count == 3 { break }
    }
    #expect(seen == [0, 1, 2])
    await receiver.close()
    await sender.close()
  }

  @Test func tenTasksSendingAThousandEachAllArriveInOrder() async throws {
    let sender = try await connect()
    let receiver = try await connect()
    let inbox = Inbox()
    _ = try await receiver.subscribe(.signal(interface: testInterface, member: "Tick")) {
      inbox.append($0)
    }
    try await withThrowingTaskGroup(of: Void.self) { group in
      for task in 0..<10 {
        group.addTask {
          for sequence in 0..<1000 { try sender.send(tick("task\(task)", UInt64(sequence))) }
        }
      }
      try await group.waitForAll()
    }
    let received = await inbox.wait(for: 10_000, seconds: 30)
    #expect(received.count == 10_000)
    var next: [String: UInt64] = [:]
    var outOfOrder = 0
    for message in received {
      let tag = message.body[0].stringValue ?? ""
      let sequence = message.body[1].uint64Value ?? 0
      if sequence != next[tag, default: 0] { outOfOrder += 1 }
      next[tag] = sequence + 1
    }
    #expect(outOfOrder == 0)
    #expect(next.count == 10)
    #expect(next.values.allSatisfy { $0 == 1000 })
    await sender.close()
    await receiver.close()
  }

  /// Sends far faster than the bus reads, so the socket fills and most sends leave part
  /// of the queue to the loop; after the last send, nothing else happens on the
  /// connection, and the loop still writes everything out.
  @Test func aFloodThatFillsTheSocketIsWrittenOutAfterTheLastSend() async throws {
    // A bus that queues all of it for the receiver, rather than drop past 1 MiB.
    let bus = try PrivateBus(outgoingLimit: 100_000_000)
    let sender = try await BusConnection.connect(to: .address(bus.address))
    let receiver = try await BusConnection.connect(to: .address(bus.address))
    let inbox = Inbox()
    _ = try await receiver.subscribe(.signal(interface: testInterface, member: "Big")) {
      inbox.append($0)
    }
    let payload = [UInt8](repeating: 0x5A, count: 16 * 1024)
    try await Task.detached {
      for sequence in 0..<1500 {
        try sender.send(
          .signal(
            path: testPath, interface: testInterface, member: "Big",
            body: [.uint64(UInt64(sequence)), .bytes(payload)]))
      }
    }.value
    let received = await inbox.wait(for: 1500, seconds: 30)
    #expect(received.map { $0.body[0].uint64Value ?? 0 } == (0..<1500).map(UInt64.init))
    await sender.close()
    await receiver.close()
  }

  @Test func methodCallRoundTripAndErrorReply() async throws {
    let server = try await connect()
    let client = try await connect()
    await server.export(at: "/org/notifybus/Calc", interface: "org.notifybus.Calc") {
      (call) throws(DBusError) in
      switch call.member?.rawValue {
      case "Add":
        guard case .int32(let a)? = call.body.first, case .int32(let b)? = call.body.last else {
          throw DBusError(.invalidArgs, "Add takes two int32 values")
        }
        return [.int32(a + b)]
      default:
        throw DBusError(.unknownMethod, "no method \(call.member?.rawValue ?? "")")
      }
    }
    let destination = try #require(await server.uniqueName)
    let reply = try await client.call(
      .methodCall(
        destination: destination, path: "/org/notifybus/Calc", interface: "org.notifybus.Calc",
        member: "Add", body: [.int32(2), .int32(40)]))
    #expect(reply.body == [.int32(42)])
    #expect(reply.kind == .methodReturn)

    let error = await #expect(throws: DBusError.self) {
      _ = try await client.call(
        .methodCall(
          destination: destination, path: "/org/notifybus/Calc", interface: "org.notifybus.Calc",
          member: "Add", body: [.string("two")]))
    }
    #expect(error?.name == .invalidArgs)
    #expect(error?.message == "Add takes two int32 values")

    let unknown = await #expect(throws: DBusError.self) {
      _ = try await client.call(
        .methodCall(
          destination: destination, path: "/org/notifybus/Nothing", interface: "org.notifybus.Calc",
          member: "Add"))
    }
    #expect(unknown?.name == .unknownMethod)
    await server.close()
    await client.close()
  }

  /// A closure handler may run off the connection's thread; a caller's pipelined calls
  /// must still be handled in the order they were sent.
  @Test func oneCallersCallsAreHandledInOrder() async throws {
    let server = try await connect()
    let client = try await connect()
    let seen = Mutex<[UInt32]>([])
    await server.export(at: "/order", interface: "org.notifybus.Order") { call in
      if case .uint32(let index)? = call.body.first {
        try? await Task.sleep(for: .microseconds(Int(index % 7) * 50))
        seen.withLock { $0.append(index) }
      }
      return []
    }
    let destination = try #require(await server.uniqueName)
    func order(_ index: UInt32) -> Message {
      .methodCall(
        destination: destination, path: "/order", interface: "org.notifybus.Order",
        member: "Record", body: [.uint32(index)])
    }
    for index in 0..<299 {
      var message = order(UInt32(index))
      message.noReplyExpected = true
      try client.send(message)
    }
    // The reply comes after the 299 calls before it, each handled after a sleep on the
    // task pool: under a full suite's load that took more than the default 25 s (it failed
    // at a load of 13), so this waits as long as the suite's limit allows.
    _ = try await client.call(order(299), timeout: .seconds(150))
    #expect(seen.withLock { $0 } == Array(0..<300))
  }

  @Test func callTimesOutWhenNobodyAnswers() async throws {
    let server = try await connect()
    let client = try await connect()
    await server.export(at: "/slow", interface: "org.notifybus.Slow") { _ in
      try? await Task.sleep(for: .seconds(5))
      return []
    }
    let destination = try #require(await server.uniqueName)
    let error = await #expect(throws: DBusError.self) {
      _ = try await client.call(
        .methodCall(
          destination: destination, path: "/slow", interface: "org.notifybus.Slow", member: "Wait"),
        timeout: .milliseconds(200))
    }
    #expect(error?.name == .noReply)
    await server.close()
    await client.close()
  }

  @Test func introspectionListsTheExportedInterface() async throws {
    let server = try await connect()
    let client = try await connect()
    let xml = #"<interface name="org.notifybus.Calc"><method name="Add"/></interface>"#
    await server.export(at: "/calc", interface: "org.notifybus.Calc", introspectionXML: xml) { _ in
      []
    }
    let destination = try #require(await server.uniqueName)
    let reply = try await client.call(
      .methodCall(
        destination: destination, path: "/calc",
        interface: "org.freedesktop.DBus.Introspectable", member: "Introspect"))
    let document = try #require(reply.body.first?.stringValue)
    #expect(document.contains(xml))
    #expect(document.hasPrefix("<!DOCTYPE node"))
  }

  @Test func parentPathsListTheirChildNodes() async throws {
    let server = try await connect()
    let client = try await connect()
    for path: ObjectPath in ["/org/example/a", "/org/example/b/deep", "/org/other"] {
      await server.export(at: path, interface: "org.notifybus.Calc") { _ in [] }
    }
    let destination = try #require(await server.uniqueName)
    func introspect(_ path: ObjectPath) async throws -> String {
      let reply = try await client.call(
        .methodCall(
          destination: destination, path: path,
          interface: "org.freedesktop.DBus.Introspectable", member: "Introspect"))
      return try #require(reply.body.first?.stringValue)
    }
    func nodes(_ document: String) -> [Substring] {
      document.split(separator: "\n").filter { $0.contains("<node name=") }
    }
    #expect(nodes(try await introspect("/")) == [#"  <node name="org"/>"#])
    #expect(
      nodes(try await introspect("/org/example"))
        == [#"  <node name="a"/>"#, #"  <node name="b"/>"#])
    #expect(nodes(try await introspect("/org/example/b")) == [#"  <node name="deep"/>"#])
    #expect(nodes(try await introspect("/org/example/a")).isEmpty)
    // A path that leads nowhere lists nothing (libdbus answers it with an empty node), and
    // other calls to a parent path fail.
    if let document = try? await introspect("/org/nothing") { #expect(nodes(document).isEmpty) }
    let error = await #expect(throws: DBusError.self) {
      _ = try await client.call(
        .methodCall(
          destination: destination, path: "/org", interface: "org.notifybus.Calc", member: "Add"))
    }
    #expect(
      error?.name == .unknownMethod || error?.name == .unknownObject, "\(String(describing: error))"
    )
    await server.close()
    await client.close()
  }

  @Test func requestNameAndCredentials() async throws {
    let first = try await connect()
    let second = try await connect()
    #expect(try await first.requestName("org.notifybus.TestName") == .primaryOwner)
    #expect(try await second.requestName("org.notifybus.TestName") == .exists)
    #expect(try await second.owner(of: "org.notifybus.TestName") == (await first.uniqueName))
    let me = try #require(await first.uniqueName)
    let credentials = try await second.credentials(of: me)
    #expect(credentials.userID == getuid())
    #expect(credentials.processID == UInt32(getpid()))
    // dbus-daemon 1.12+ reports the supplementary groups; ours include the primary group.
    if let groups = credentials.groupIDs {
      #expect(groups.contains(getgid()), "\(groups)")
    }
    #expect(try await second.unixUser(of: me) == getuid())
    try await first.releaseName("org.notifybus.TestName")
    let error = await #expect(throws: DBusError.self) {
      _ = try await second.owner(of: "org.notifybus.TestName")
    }
    #expect(error?.name == .nameHasNoOwner)
  }

  @Test func oneMatchRulePerDistinctRuleRemovedWithTheLastSubscriber() async throws {
    let connection = try await connect()
    let observer = try await connect()
    let rule = MatchRule.signal(interface: testInterface, member: "Tick")
    let subscriptions = try await (0..<5).asyncMap { _ in
      try await connection.subscribe(rule) { _ in }
    }
    let me = try #require(await connection.uniqueName)
    #expect(try await matchRules(of: me, via: observer) == 1)
    #expect(await connection.matchRuleCount == 1)
    for subscription in subscriptions.dropLast() { await subscription.cancel() }
    #expect(try await matchRules(of: me, via: observer) == 1)
    await subscriptions.last?.cancel()
    try await connection.flush()
    #expect(try await matchRules(of: me, via: observer) == 0)
    #expect(await connection.matchRuleCount == 0)
  }

  /// What a reconnected connection sends first meets its match rules back on the bus: a
  /// signal sent as the connection reports it is back comes back to its own subscription.
  ///
  /// The rules were added after the queued messages went out, so a message sent at once
  /// (notifyd's bridge confirms a post by its own copy) found no rule to come back through.
  @Test func theRulesAreBackBeforeTheFirstMessageAfterAReconnection() async throws {
    let connection = try await connect()
    let inbox = Inbox()
    _ = try await connection.subscribe(.signal(interface: testInterface, member: "Tick")) {
      inbox.append($0)
    }
    // Called on the connection's thread as it comes back, before it sends anything else.
    _ = await connection.addStateObserver { state in
      if case .connected = state { try? connection.send(tick("back", 1)) }
    }
    bus.kill()
    try await Task.sleep(for: .milliseconds(100))
    try bus.start()
    let received = await inbox.wait(for: 1)
    #expect(received.count == 1, "the first signal after the reconnection did not come back")
  }

  @Test func reconnectsAfterTheBusRestarts() async throws {
    let sender = try await connect()
    let receiver = try await connect()
    let inbox = Inbox()
    _ = try await receiver.subscribe(.signal(interface: testInterface, member: "Tick")) {
      inbox.append($0)
    }
    // When each connection is back, stamped by the connection's own thread as its state
    // changes, so a busy test machine delays only the check, not the measurement.
    let reconnectedAt = Mutex<[ContinuousClock.Instant]>([])
    for connection in [sender, receiver] {
      _ = await connection.addStateObserver { state in
        if case .connected = state { reconnectedAt.withLock { $0.append(.now) } }
      }
    }
    let firstBus = try await receiver.busID()
    bus.kill()
    try await Task.sleep(for: .milliseconds(100))
    try bus.start()
    let restarted = ContinuousClock.now
    await waitUntil(timeout: .seconds(30)) { reconnectedAt.withLock { $0.count } >= 2 }
    let delays = reconnectedAt.withLock { $0.map { $0 - restarted } }
    #expect(delays.count == 2)
    // Alone this takes about 75 ms (the backoff is capped at 250 ms), well inside the 2 s
    // the design asks for. The full suite runs hundreds of tests on two cores at once and
    // was seen to stretch it to 2.4 s, so the bound here leaves room for that load.
    #expect(delays.allSatisfy { $0 < .seconds(5) }, "back after \(delays) of the restart")
    #expect(try await receiver.busID() != firstBus)
    try await receiver.flush()
    try sender.send(tick("after", 7))
    let received = await inbox.wait(for: 1, seconds: 5)
    #expect(received.last?.body == [.string("after"), .uint64(7)])
  }

  @Test func stateChangesReportTheRestart() async throws {
    let connection = try await connect()
    let states = Inbox()
    let id = await connection.addStateObserver { state in
      if case .reconnecting = state { states.append(tick("reconnecting", 0)) }
      if case .connected = state { states.append(tick("connected", 0)) }
    }
    bus.kill()
    try bus.start()
    await waitUntil(timeout: .seconds(20)) { states.all.last?.body.first == "connected" }
    let seen = states.all
    #expect(seen.first?.body.first == "reconnecting")
    #expect(seen.last?.body.first == "connected", "\(seen.map { $0.body.first ?? "" })")
    await connection.removeStateObserver(id)
  }

  /// A connection released while it waits for its bus to come back ends: its retries
  /// do not keep it alive.
  @Test func aConnectionReleasedWhileItsBusIsDownEnds() async throws {
    var connection: BusConnection? = try await connect()
    weak let released = connection
    let retries = Inbox()
    _ = await connection?.addStateObserver { state in
      if case .reconnecting(let attempt) = state, attempt > 1 { retries.append(tick("retry", 0)) }
    }
    bus.kill()
    #expect(await retries.wait(for: 1).count >= 1)
    connection = nil
    let deadline = ContinuousClock.now + .seconds(10)
    while released != nil && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(10))
    }
    #expect(released == nil)
  }

  /// A connection released as its bus dies does not take the process down (issue 11,
  /// item 14).
  ///
  /// Its last reference goes while its event loop dispatches, with the bus's
  /// `Disconnected` queued right behind; this aborted with "BusConnection deallocated
  /// with non-zero retain count". Run in another process, which the abort would end.
  @Test func releasingAConnectionAsItsBusDiesDoesNotCrash() async throws {
    for cycle in 0..<2 {
      if cycle > 0 { try bus.start() }
      let pid = try #require(bus.pid)
      let address = bus.address.rawValue
      let result = try await offThePool {
        try Products.run("dbus-test-peer", ["release-as-bus-dies", address, String(pid)])
      }
      #expect(result.status == 0 && result.output == "released\n", "cycle \(cycle): \(result)")
      bus.kill()
    }
  }

  @Test func messagesFromAnotherProcessArriveInOrder() async throws {
    let receiver = try await connect()
    let inbox = Inbox()
    _ = try await receiver.subscribe(.signal(interface: testInterface, member: "Tick")) {
      inbox.append($0)
    }
    let result = try await Products.runAsync(
      "dbus-test-peer", ["emit", bus.address.rawValue, "500", "peer"])
    #expect(result.status == 0, "\(result)")
    let received = await inbox.wait(for: 500)
    #expect(received.map { $0.body[1].uint64Value ?? 0 } == (0..<500).map(UInt64.init))
  }
}

/// How many match rules the bus holds for connection `name`, from the daemon's own
/// statistics (`org.freedesktop.DBus.Debug.Stats`).
func matchRules(of name: BusName, via connection: BusConnection) async throws -> Int {
  let reply = try await connection.call(
    .methodCall(
      destination: .bus, path: "/org/freedesktop/DBus",
      interface: "org.freedesktop.DBus.Debug.Stats", member: "GetConnectionStats",
      body: [.string(name.rawValue)]))
  let stats = try #require(reply.body.first?.stringDictionary)
  return Int(try #require(stats["MatchRules"]?.uint64Value))
}

extension Sequence {
  func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
    var result: [T] = []
    for element in self { result.append(try await transform(element)) }
    return result
  }
}
