import BusTestSupport
import DBus
import Synchronization
import Testing

/// A message sent from another thread while the connection's loop is reading goes out
/// at once.
///
/// libdbus writes a send at once when it can take the connection's I/O path; when the
/// loop holds it (each time it handles the socket's read watch, for a moment), the send is
/// only queued, and libdbus enables the write watch only at the end of an I/O iteration,
/// which that send did not run. A loop that polled enabled write watches only then slept
/// with the message queued until the next send: a call made on its own waited out its
/// timeout (the bridge test's 25 s `NoReply` in CI).
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct SendDuringReadTests {
  /// Each round trip to the bus is answered while another connection floods this one.
  ///
  /// The round trips go one at a time from the test's thread; the flood of signals keeps
  /// the loop handling its read watch all the time. Seen failing without the fix in two of three runs (2 of 40,000 round trips
  /// unanswered in 500 ms in each); none of 180,000 unanswered with it.
  @Test func aCallSentWhileTheLoopReadsAFloodIsAnswered() async throws {
    let bus = try PrivateBus()
    let receiver = try await BusConnection.connect(to: .address(bus.address))
    let flooder = try await BusConnection.connect(to: .address(bus.address))
    let heard = Atomic<Int>(0)
    let subscription = try await receiver.subscribe(.signal(member: "Flood", path: "/flood")) {
      _ in heard.add(1, ordering: .relaxed)
    }
    let stop = Atomic<Bool>(false)
    let flood = Task.detached {
      let signal = Message.signal(
        path: "/flood", interface: "org.example.Flood", member: "Flood", body: [.string("x")])
      while !stop.load(ordering: .relaxed) {
        for _ in 0..<20 { try flooder.send(signal) }
        try await flooder.flush()
      }
    }
    let ping = Message.methodCall(
      destination: .bus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus.Peer",
      member: "Ping")
    // 40,000 round trips (about 18 s on 2 vCPUs), or as many as 30 s allow under load.
    let deadline = ContinuousClock.now + .seconds(30)
    var calls = 0
    var unanswered = 0
    while calls < 40_000 && ContinuousClock.now < deadline {
      calls += 1
      do {
        _ = try await receiver.call(ping, timeout: .milliseconds(500))
      } catch {
        unanswered += 1
      }
    }
    stop.store(true, ordering: .relaxed)
    try await flood.value
    await subscription.cancel()
    #expect(heard.load(ordering: .relaxed) > calls, "the flood did not keep the loop reading")
    #expect(unanswered == 0, "\(unanswered) of \(calls) round trips unanswered in 500 ms")
  }
}
