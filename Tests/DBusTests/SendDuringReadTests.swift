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
  /// the loop handling its read watch all the time. Seen failing without the fix: in two of
  /// three runs of a first version (2 of 40,000 round trips unanswered in 500 ms in each),
  /// and in one of three of this one on a machine loaded by a CI build (round trip 23,625
  /// unanswered after 10 s); none of 180,000 unanswered with it.
  @Test func aCallSentWhileTheLoopReadsAFloodIsAnswered() async throws {
    let bus = try PrivateBus()
    let receiver = try await BusConnection.connect(to: .address(bus.address))
    let flooder = try await BusConnection.connect(to: .address(bus.address))
    let heard = Atomic<Int>(0)
    let subscription = try await receiver.subscribe(.signal(member: "Flood", path: "/flood")) {
      _ in heard.add(1, ordering: .relaxed)
    }
    let stop = Atomic<Bool>(false)
    // At most about 1,000 signals ahead of the receiver, so that a slow receiver on a loaded
    // machine does not queue ever more of them in front of each answer.
    let flood = Task.detached {
      let signal = Message.signal(
        path: "/flood", interface: "org.example.Flood", member: "Flood", body: [.string("x")])
      var sent = 0
      while !stop.load(ordering: .relaxed) {
        if sent - heard.load(ordering: .relaxed) > 1000 {
          try await Task.sleep(for: .milliseconds(1))
          continue
        }
        for _ in 0..<20 { try flooder.send(signal) }
        sent += 20
        try await flooder.flush()
      }
    }
    let ping = Message.methodCall(
      destination: .bus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus.Peer",
      member: "Ping")
    // 40,000 round trips (about 18 s on 2 vCPUs), or as many as 30 s allow under load. A
    // call left queued stays so until the next send, which here comes only after its
    // timeout: 10 s tells it from a slow answer.
    let deadline = ContinuousClock.now + .seconds(30)
    var calls = 0
    var unanswered: DBusError?
    while calls < 40_000 && ContinuousClock.now < deadline {
      calls += 1
      do throws(DBusError) {
        _ = try await receiver.call(ping, timeout: .seconds(10))
      } catch {
        unanswered = error
        break
      }
    }
    stop.store(true, ordering: .relaxed)
    try await flood.value
    await subscription.cancel()
    #expect(heard.load(ordering: .relaxed) > calls, "the flood did not keep the loop reading")
    #expect(unanswered == nil, "round trip \(calls) unanswered: \(unanswered.map(\.message) ?? "")")
  }
}
