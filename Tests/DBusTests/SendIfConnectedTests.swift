import BusTestSupport
import DBus
import Dispatch
import Glibc
import Synchronization
import Testing

/// `sendIfConnected`: a message is taken only by a connection that is up at that moment,
/// never kept for a reconnection (notifyd's bridge acknowledges a broker's post only
/// when the bus took it).
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
struct SendIfConnectedTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  func connect() async throws -> BusConnection {
    try await BusConnection.connect(to: .address(bus.address))
  }

  /// A bus that dies before the connection noticed is told only by a round trip.
  ///
  /// While the connection's own thread is busy (a handler runs), the bus dies. libdbus
  /// takes a write's EPIPE as "wait for the read to see the end", so it still counts
  /// the connection as connected and sendIfConnected takes the messages, which are lost:
  /// only a round trip (flush()) tells the sender, which is why notifyd's bridge
  /// acknowledges a broker's posts only after one (Protocol/bridge.md).
  @Test func onlyARoundTripTellsThatTheBusDiedBeforeTheConnectionNoticed() async throws {
    let connection = try await connect()
    let release = DispatchSemaphore(value: 0)
    let blocking = Atomic<Bool>(false)
    let subscription = try await connection.subscribe(
      .signal(interface: testInterface, member: "Tick", arg0: "block")
    ) { _ in
      blocking.store(true, ordering: .releasing)
      release.wait()
    }
    try connection.send(tick("block", 0))
    let blocked = await waitUntil { blocking.load(ordering: .acquiring) }
    #expect(blocked)
    bus.kill()
    // Taken or refused, whichever libdbus decides: neither reached the bus.
    for sequence in 1...5 { try? connection.sendIfConnected(tick("lost", UInt64(sequence))) }
    release.signal()
    await #expect(throws: DBusError.self) { try await connection.flush() }
    await subscription.cancel()
    await connection.close()
  }

  @Test func refusesWhileReconnectingAndKeepsNothing() async throws {
    let sender = try await connect()
    let receiver = try await connect()
    let inbox = Inbox()
    let subscription = try await receiver.subscribe(
      .signal(interface: testInterface, member: "Tick")
    ) { inbox.append($0) }
    bus.kill()
    await waitUntil { await sender.uniqueName == nil }
    #expect(throws: DBusError.self) { try sender.sendIfConnected(tick("lost", 1)) }
    try bus.start()
    await waitUntil(timeout: .seconds(30)) {
      let senderBack = await sender.uniqueName != nil
      let receiverBack = await receiver.uniqueName != nil
      return senderBack && receiverBack
    }
    // Both are back, the receiver's rule restored (its round trip after AddMatch).
    try await receiver.flush()
    try await waitUntil(timeout: .seconds(10)) {
      try sender.sendIfConnected(tick("after", 2))
      try await sender.flush()
      return !inbox.all.isEmpty
    }
    try await Task.sleep(for: .milliseconds(50))
    let tags = inbox.all.map { $0.body.first }
    #expect(tags.contains(.string("after")), "\(tags)")
    #expect(!tags.contains(.string("lost")), "\(tags)")
    await subscription.cancel()
    await sender.close()
    await receiver.close()
  }
}
