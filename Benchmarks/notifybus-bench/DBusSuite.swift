import BusTestSupport
import CBaseline
import CSDBusBaseline
import DBus
import Dispatch
import Synchronization
import SystemSupport

/// The `DBus` module against C code that calls libdbus directly: one-way signal latency
/// and 1 -> 1 throughput between two connections through a private `dbus-daemon`; C code on
/// sd-bus is the second peer.
///
/// The latency rows take their two sides in short alternating blocks, as the notifyd
/// suite's GetState rows do: ``latencyBlock`` ticks of the Swift pair, then as many of the C
/// pair, then C before Swift, and so on, each pair on the connections it keeps for the whole
/// run, the first ``warmUpTicks`` of every block dropped on both sides, the samples pooled
/// per side. Before (until 2026-12-02), each side sent 3,000 ticks on connections of its
/// own in three rounds in a fixed order, and the p50 row read 0.77x–1.30x in one
/// `--repeat 3` run (0.94x and 1.12x in two quiet runs a session apart): a stretch of a
/// slower machine landed on one side only.
enum DBusSuite: BenchmarkSuite {
  static let name = "dbus"
  /// Ticks in one block of a latency row's side.
  static let latencyBlock = 250
  /// Ticks at the start of each block left out of the samples (the first after the other
  /// side's block finds colder caches and threads that may have to be woken).
  static let warmUpTicks = 10

  static let interface: InterfaceName = "org.notifybus.Bench"

  /// A tick carrying `sent`, by default the time of the call: before the message is built,
  /// as the C baseline's clock starts.
  static func tick(_ sequence: Int, sent: Int = MonotonicClock.now) -> Message {
    .signal(
      path: "/org/notifybus/Bench", interface: interface, member: "Tick",
      body: [.string("bench"), .uint64(UInt64(sequence)), .uint64(UInt64(sent))])
  }

  static func run(scale: Double) async throws -> [BenchmarkRow] {
    let bus = try PrivateBus(outgoingLimit: benchmarkOutgoingLimit)
    let latencyCount = max(200, Int(3000 * scale))
    let throughputCount = max(2000, Int(50_000 * scale))
    let rounds = 3

    var swiftP50: [Double] = []
    var swiftP99: [Double] = []
    var cP50: [Double] = []
    var cP99: [Double] = []
    var swiftRate: [Double] = []
    var cRate: [Double] = []
    var sdP50: [Double] = []
    var sdP99: [Double] = []
    var sdRate: [Double] = []
    let swiftPair = try await SwiftLatencyPair(bus.address)
    guard let cPair = cbaseline_latency_open(bus.address.rawValue) else {
      throw DBusError(.failed, "the C latency baseline did not connect")
    }
    defer { cbaseline_latency_close(cPair) }
    var swiftSamples: [Double] = []
    var cSamples: [Double] = []
    let blocks = max(2, rounds * latencyCount / latencyBlock)
    for block in 0..<blocks {
      if block % 2 == 0 {
        swiftSamples += try await swiftPair.block(latencyBlock).dropFirst(warmUpTicks)
        cSamples += try cLatencyBlock(cPair, count: latencyBlock).dropFirst(warmUpTicks)
      } else {
        cSamples += try cLatencyBlock(cPair, count: latencyBlock).dropFirst(warmUpTicks)
        swiftSamples += try await swiftPair.block(latencyBlock).dropFirst(warmUpTicks)
      }
    }
    await swiftPair.close()
    let swift = Percentiles(swiftSamples)
    let c = Percentiles(cSamples)
    swiftP50.append(swift[0.5])
    swiftP99.append(swift[0.99])
    cP50.append(c[0.5])
    cP99.append(c[0.99])
    for _ in 0..<rounds {
      // Interleave the two so that drift in the machine's speed hits both alike.
      let sd = try sdLatency(bus.address, count: latencyCount)
      sdP50.append(sd[0.5])
      sdP99.append(sd[0.99])
      swiftRate.append(try await swiftThroughput(bus.address, count: throughputCount))
      cRate.append(try cThroughput(bus.address, count: throughputCount))
      sdRate.append(try sdThroughput(bus.address, count: throughputCount))
    }
    return [
      BenchmarkRow(
        name: "signal one-way latency p50", unit: "µs", subject: median(swiftP50),
        baselineName: "C libdbus", baseline: median(cP50), higherIsBetter: false, target: 1.1,
        secondBaselineName: "C sd-bus", secondBaseline: median(sdP50)),
      BenchmarkRow(
        name: "signal one-way latency p99", unit: "µs", subject: median(swiftP99),
        baselineName: "C libdbus", baseline: median(cP99), higherIsBetter: false, target: nil,
        secondBaselineName: "C sd-bus", secondBaseline: median(sdP99)),
      BenchmarkRow(
        name: "signal throughput 1→1", unit: "signals/s", subject: median(swiftRate),
        baselineName: "C libdbus", baseline: median(cRate), higherIsBetter: true, target: 0.95,
        secondBaselineName: "C sd-bus", secondBaseline: median(sdRate)),
    ]
  }

  /// A receiver and a sender of ticks, open for the whole run.
  final class SwiftLatencyPair: Sendable {
    let receiver: BusConnection
    let sender: BusConnection
    let subscription: SignalSubscription
    /// The current block's latencies, filled by the receiver's handler.
    final class Samples: Sendable { let list = Mutex<[Double]>([]) }
    let samples = Samples()
    let arrived = DispatchSemaphore(value: 0)

    init(_ address: BusAddress) async throws {
      receiver = try await BusConnection.connect(to: .address(address))
      sender = try await BusConnection.connect(to: .address(address))
      let samples = self.samples
      let arrived = self.arrived
      // This pair's sender only: the C pair's ticks, sent while this one waits between its
      // blocks, would otherwise queue here.
      subscription = try await receiver.subscribe(
        .signal(interface: DBusSuite.interface, member: "Tick", sender: await sender.uniqueName)
      ) { message in
        let now = MonotonicClock.now
        if case .uint64(let sent)? = message.body.last {
          samples.list.withLock { $0.append(Double(now - Int(sent)) / 1000) }
        }
        arrived.signal()
      }
    }

    /// Sends `count` ticks, each once the one before arrived.
    ///
    /// - Returns: Their latencies in µs.
    func block(_ count: Int) async throws -> [Double] {
      samples.list.withLock { $0.removeAll(keepingCapacity: true) }
      let sender = self.sender
      let arrived = self.arrived
      try await Task.detached {
        for sequence in 0..<count {
          try sender.send(tick(sequence))
          guard arrived.wait(timeout: .now() + 5) == .success else {
            throw DBusError(.timeout, "signal \(sequence) did not arrive")
          }
        }
      }.value
      return samples.list.withLock { $0 }
    }

    func close() async {
      await subscription.cancel()
      await sender.close()
      await receiver.close()
    }
  }

  private static func cLatencyBlock(_ session: UnsafeMutableRawPointer, count: Int) throws
    -> [Double]
  {
    var samples = [Double](repeating: 0, count: count)
    guard cbaseline_latency_block(session, CInt(count), &samples) == 0 else {
      throw DBusError(.failed, "the C latency baseline failed")
    }
    return samples
  }

  private static func sdLatency(_ address: BusAddress, count: Int) throws -> Percentiles {
    var samples = [Double](repeating: 0, count: count)
    guard csdbus_latency(address.rawValue, CInt(count), &samples) == 0 else {
      throw DBusError(.failed, "the C sd-bus latency baseline failed")
    }
    return Percentiles(Array(samples.dropFirst(count / 10)))
  }

  private static func swiftThroughput(_ address: BusAddress, count: Int) async throws -> Double {
    let receiver = try await BusConnection.connect(to: .address(address))
    let sender = try await BusConnection.connect(to: .address(address))
    let received = Atomic<Int>(0)
    let last = Atomic<Int>(0)
    let subscription = try await receiver.subscribe(.signal(interface: interface, member: "Tick")) {
      _ in
      received.add(1, ordering: .relaxed)
      last.store(MonotonicClock.now, ordering: .relaxed)
    }
    let start = MonotonicClock.now
    try await Task.detached {
      for sequence in 0..<count { try sender.send(tick(sequence)) }
    }.value
    let deadline = MonotonicClock.now + 60_000_000_000
    while received.load(ordering: .relaxed) < count && MonotonicClock.now < deadline {
      try await Task.sleep(for: .milliseconds(1))
    }
    await subscription.cancel()
    await sender.close()
    await receiver.close()
    guard received.load(ordering: .relaxed) == count else {
      throw DBusError(.timeout, "only \(received.load(ordering: .relaxed)) of \(count) arrived")
    }
    return Double(count) / (Double(last.load(ordering: .relaxed) - start) / 1e9)
  }

  private static func cThroughput(_ address: BusAddress, count: Int) throws -> Double {
    let rate = cbaseline_throughput(address.rawValue, CInt(count))
    guard rate > 0 else { throw DBusError(.failed, "the C throughput baseline failed") }
    return rate
  }

  private static func sdThroughput(_ address: BusAddress, count: Int) throws -> Double {
    let rate = csdbus_throughput(address.rawValue, CInt(count))
    guard rate > 0 else { throw DBusError(.failed, "the C sd-bus throughput baseline failed") }
    return rate
  }
}
