import BusTestSupport
import DBus
import Foundation
import Synchronization
import Testing

/// A connection whose last reference goes while its own thread is in the middle of
/// something (a signal handler or a method handler that libdbus is dispatching to, a task
/// that prefers its thread) is closed and freed as a job of its own, after that work: never
/// from inside it, where libdbus or the task would go on using what was freed.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
struct ReleaseOnTheConnectionsThreadTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  /// The only strong reference to a connection, which a handler running on that
  /// connection's thread lets go.
  final class Holder: Sendable {
    let connection = Mutex<BusConnection?>(nil)
    private let closed = Atomic<Bool>(false)
    private let released = Atomic<Bool>(false)
    private let closedInside = Atomic<Bool>(false)
    private let closedInDispatch = Atomic<Bool>(false)

    /// Whether, once the reference was let go, the work after it still ran.
    var carriedOn: Bool { released.load(ordering: .acquiring) }
    /// Whether the connection was already closed when the work that let go of it went on:
    /// its deinit ran inside that work.
    var closedInsideTheWork: Bool { closedInside.load(ordering: .acquiring) }
    /// Whether the connection was closed from inside libdbus's dispatch of a message (the
    /// filter that called the handler, still on the stack, let go of it last), where libdbus
    /// goes on using the connection after the close.
    var closedInsideLibdbusDispatch: Bool { closedInDispatch.load(ordering: .acquiring) }

    /// Holds `connection`, noting when it closes.
    func hold(_ connection: BusConnection) async {
      _ = await connection.addStateObserver { state in
        guard state == .closed else { return }
        // libdbus's exported dispatch function on the stack: the close runs inside it.
        let inDispatch = Thread.callStackSymbols.contains {
          $0.contains("dbus_connection_dispatch")
        }
        self.closedInDispatch.store(inDispatch, ordering: .releasing)
        self.closed.store(true, ordering: .releasing)
      }
      self.connection.withLock { $0 = connection }
    }

    func release() {
      let connection = self.connection.withLock { connection in
        defer { connection = nil }
        return connection
      }
      _ = consume connection
      closedInside.store(closed.load(ordering: .acquiring), ordering: .releasing)
      released.store(true, ordering: .releasing)
    }
  }

  /// Waits until `freed` is true, failing after 10 s.
  func waitUntilFreed(_ freed: () -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(10)
    while !freed() {
      guard ContinuousClock.now < deadline else {
        Issue.record("the connection was never freed")
        return
      }
      try await Task.sleep(for: .milliseconds(10))
    }
  }

  @Test(arguments: 0..<8) func aSignalHandlerLettingGoOfItsConnection(_ round: Int) async throws {
    let holder = Holder()
    weak var weakConnection: BusConnection?
    let rule = MatchRule.signal(interface: "org.notifybus.Release", member: "Go")
    do {
      let connection = try await BusConnection.connect(to: .address(bus.address))
      weakConnection = connection
      _ = try await connection.subscribe(rule) { _ in holder.release() }
      await holder.hold(connection)
    }
    let sender = try await BusConnection.connect(to: .address(bus.address))
    try sender.send(
      .signal(path: "/org/notifybus/Release", interface: "org.notifybus.Release", member: "Go"))
    try await waitUntilFreed { weakConnection == nil }
    #expect(holder.carriedOn)
    #expect(!holder.closedInsideTheWork)
    #expect(!holder.closedInsideLibdbusDispatch)
    // The other connection and the bus are still fine.
    #expect(try await sender.busID().isEmpty == false)
    await sender.close()
  }

  @Test(arguments: 0..<8) func aMethodHandlerLettingGoOfItsConnection(_ round: Int) async throws {
    let holder = Holder()
    weak var weakConnection: BusConnection?
    let name: BusName
    do {
      let connection = try await BusConnection.connect(to: .address(bus.address))
      weakConnection = connection
      await connection.export(at: "/release", interface: "org.notifybus.Release") { call in
        holder.release()
        return call.body
      }
      name = try #require(await connection.uniqueName)
      await holder.hold(connection)
    }
    let caller = try await BusConnection.connect(to: .address(bus.address))
    let call = Message.methodCall(
      destination: name, path: "/release", interface: "org.notifybus.Release", member: "Go",
      body: [.string("answered")])
    // The handler may answer before the connection goes, or the connection may go first:
    // either way the call ends, and nothing crashes.
    let reply = try? await caller.call(call, timeout: .seconds(5))
    if let reply { #expect(reply.body == [.string("answered")]) }
    try await waitUntilFreed { weakConnection == nil }
    #expect(holder.carriedOn)
    #expect(!holder.closedInsideTheWork)
    #expect(!holder.closedInsideLibdbusDispatch)
    #expect(try await caller.busID().isEmpty == false)
    await caller.close()
  }

  @Test(arguments: 0..<8) func aTaskOnTheConnectionsExecutorLettingGoOfIt(_ round: Int)
    async throws
  {
    let holder = Holder()
    weak var weakConnection: BusConnection?
    let executor: any TaskExecutor
    do {
      let connection = try await BusConnection.connect(to: .address(bus.address))
      weakConnection = connection
      executor = connection.taskExecutor
      await holder.hold(connection)
    }
    let onThread = await Task(executorPreference: executor) {
      // A call first, so that the task runs there as a reply resumed it.
      do {
        let connection = holder.connection.withLock { $0 }
        _ = try? await connection?.busID()
      }
      holder.release()
      // The task goes on where it is, after the connection it ran for is gone.
      try? await Task.sleep(for: .milliseconds(1))
      return holder.carriedOn
    }.value
    #expect(onThread)
    #expect(!holder.closedInsideTheWork)
    try await waitUntilFreed { weakConnection == nil }
  }
}
