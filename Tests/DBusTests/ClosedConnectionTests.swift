import BusTestSupport
import DBus
import Synchronization
import Testing

/// Everything asked of a closed connection, whose thread has ended, still answers.
///
/// What needs the bus fails with ``DBusError/Name/disconnected``, the rest returns. Each of
/// these waited for ever before (the work went to a thread that was gone); the suite's
/// time limit turns a wait into a failure.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
struct ClosedConnectionTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  /// A connection closed a while ago: long enough for its thread to have ended, usually
  /// (before the fix, a method reaching the thread before it ended still ran).
  func closedConnection() async throws -> BusConnection {
    let connection = try await BusConnection.connect(to: .address(bus.address))
    await connection.close()
    try await Task.sleep(for: .milliseconds(50))
    return connection
  }

  func expectDisconnected(
    _ operation: String, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
  ) async {
    do {
      try await body()
      Issue.record("\(operation) on a closed connection succeeded", sourceLocation: sourceLocation)
    } catch {
      #expect(
        (error as? DBusError)?.name == .disconnected, "\(operation): \(error)",
        sourceLocation: sourceLocation)
    }
  }

  @Test func methodsThatNeedTheBusFailWithDisconnected() async throws {
    let connection = try await closedConnection()
    let name: BusName = "org.notifybus.Closed"
    await expectDisconnected("requestName") { _ = try await connection.requestName(name) }
    await expectDisconnected("releaseName") { try await connection.releaseName(name) }
    await expectDisconnected("owner") { _ = try await connection.owner(of: .bus) }
    await expectDisconnected("unixUser") { _ = try await connection.unixUser(of: .bus) }
    await expectDisconnected("credentials") { _ = try await connection.credentials(of: .bus) }
    await expectDisconnected("busID") { _ = try await connection.busID() }
    await expectDisconnected("flush") { try await connection.flush() }
    let rule = MatchRule.signal(interface: "org.notifybus.Closed", member: "Said")
    await expectDisconnected("subscribe") { _ = try await connection.subscribe(rule) { _ in } }
    await expectDisconnected("signals") { _ = try await connection.signals(matching: rule) }
    let getID = Message.methodCall(
      destination: .bus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
      member: "GetId")
    await expectDisconnected("call") { _ = try await connection.call(getID) }
  }

  @Test func sendIsRefusedInsteadOfQueuedForEver() async throws {
    let connection = try await closedConnection()
    let signal = Message.signal(
      path: "/org/notifybus/Closed", interface: "org.notifybus.Closed", member: "Said")
    #expect {
      try connection.send(signal)
    } throws: { error in
      (error as? DBusError)?.name == .disconnected
    }
  }

  @Test func methodsThatNeedNoBusReturn() async throws {
    let connection = try await closedConnection()
    await connection.close()
    #expect(await connection.state == .closed)
    #expect(await connection.uniqueName == nil)
    #expect(await connection.matchRuleCount == 0)
    await connection.export(at: "/closed", interface: "org.notifybus.Closed") { _ in [] }
    await connection.unexport(at: "/closed")
    let observer = await connection.addStateObserver { _ in }
    await connection.removeStateObserver(observer)
    var states: [BusConnection.State] = []
    for await state in await connection.stateChanges() { states.append(state) }
    #expect(states == [.closed])
  }

  @Test func aSubscriptionMadeBeforeCanStillBeCancelled() async throws {
    let connection = try await BusConnection.connect(to: .address(bus.address))
    let subscription = try await connection.subscribe(
      .signal(interface: "org.notifybus.Closed", member: "Said")
    ) { _ in }
    await connection.close()
    await subscription.cancel()
    #expect(await connection.matchRuleCount == 0)
  }

  @Test func aTaskOnTheConnectionsExecutorStillRuns() async throws {
    let connection = try await closedConnection()
    let ran = await Task(executorPreference: connection.taskExecutor) {
      connection.isOnConnectionThread
    }.value
    #expect(ran)
  }

  @Test func anActorsCallInFlightFailsWhenTheConnectionCloses() async throws {
    let server = try await BusConnection.connect(to: .address(bus.address))
    await server.export(at: "/calls", interface: "org.notifybus.Calls") { call in
      try? await Task.sleep(for: .seconds(5))
      return call.body
    }
    let name = try #require(await server.uniqueName)
    let client = try await BusConnection.connect(to: .address(bus.address))
    let caller = RecordingCaller(client)
    let call = Task { try await caller.wait(on: name) }
    // The call is waiting once the server has it (its handler is sleeping).
    try await Task.sleep(for: .milliseconds(100))
    await client.close()
    let result = await call.result
    // A reply would come after 5 s; the close ends the call first.
    #expect(throws: DBusError.self) { try result.get() }
    if case .failure(let error as DBusError) = result { #expect(error.name == .disconnected) }
    await server.close()
  }

  @Test func aConnectionReleasedAfterClosingIsFreed() async throws {
    final class Sentinel: Sendable {}
    weak var sentinel: Sentinel?
    do {
      let connection = try await BusConnection.connect(to: .address(bus.address))
      let held = Sentinel()
      sentinel = held
      await connection.export(at: "/closed", interface: "org.notifybus.Closed") { _ in
        withExtendedLifetime(held) { [] }
      }
      await connection.close()
      try await Task.sleep(for: .milliseconds(50))  // as closedConnection()
    }
    // What the connection holds is released once its isolated deinit has run, which runs
    // where its jobs do: after the thread has ended, on the queue that took over from it
    // (before, the deinit waited for the thread, for ever).
    while sentinel != nil { try await Task.sleep(for: .milliseconds(10)) }
  }
}

extension RecordingCaller {
  /// Calls `Wait` (which the test's server answers after 5 s) from the actor.
  func wait(on name: BusName) async throws -> Message {
    try await client.call(CallTests.call("Wait", to: name))
  }
}
