import BusTestSupport
import CBridgeBaseline
import CMQTTBaseline
import DBus
import Dispatch
import Notify
import NotifyBridge
import NotifyServer
import Synchronization
import SystemSupport

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

/// A post on host A reaching a dispatch handler on host B through two notifyds bridged by
/// one mosquitto (each host a private bus with its own `NotifyServer`), against the same
/// MQTT hop made by two C libmosquitto clients through the same broker in the same run,
/// and against a local post on B.
///
/// The C MQTT hop is as fast as a careful C programmer makes it, and driven as notifyd
/// and the C bridge drive their clients (`CMQTTBaseline`): unthreaded, from a thread per
/// client, so that the publish is written at once on the benchmark thread, the wake socket
/// pair closed, and the arrival stamped in the subscriber's callback (as the bridges'
/// handlers stamp theirs). Until 2026-12-02 it used libmosquitto's threaded loop, a thread
/// wakeup per publish and one more before its clock stopped, which neither bridge pays:
/// that flattered the issue-16 row. The old figure stays as an informational row
/// (`… threaded loop`) for one session, so that the move is visible.
///
/// Method: the pairs of C clients and the C journey are opened once per run; the six
/// latencies are taken in short blocks whose order shifts by one every part, so that no
/// peer always follows the same one; "hop minus local post" is the median over the parts
/// of each part's hop-block median minus its local-block median (a paired estimate: the
/// difference of two overall medians swung with load), the spread of the per-part
/// differences printed on standard error. The rates alternate two names on the NotifyBus
/// side, so that no message repeats the one before it (the C journey posts one name).
///
/// Beside them, the same journey written in C with the same architecture
/// (`CBridgeBaseline`): a libdbus poster on a bus A, a C bridge A (a libdbus match on
/// `Posted` → a QoS 1 PUBLISH with the topic and stamp of Protocol/bridge.md), the same
/// broker, a C bridge B (the PUBLISH → the `Posted` signal on a bus B, its PUBACK held until
/// its own copy comes back), and a libdbus handler on a dispatch queue on B, all in this
/// process with the notifyds' threads (each bridge a D-Bus thread that writes the PUBLISH
/// and an MQTT thread that reads and posts). Its rows (`C bridge …`) turn "the target is
/// below this architecture's floor" into a measurement: "C bridge hop minus local post" is
/// what the design costs over the C MQTT hop with no NotifyBus code in it; the second peer
/// of the NotifyBus rows is what NotifyBus costs over that floor.
///
/// With the unthreaded C MQTT hop and the paired differences (2026-12-02 04:02, release,
/// `--repeat 3 bridge`, the machine quiet, load 0.2): the C MQTT hop p50 44 µs, 84 µs
/// with the threaded loop (1.89x, 1.81–1.92x); "bridge hop minus local post" 130 µs,
/// 2.73x (2.41–3.52x) the C hop (1.55x against the threaded one); "C bridge hop minus
/// local post" 126 µs, 2.81x (2.62–2.91x): NotifyBus's row is the C bridge's (0.97x,
/// 0.92–1.21x), and the architecture's floor is about 2.8x a careful C MQTT hop, far
/// above the 1.3x target. Per-part differences 79–272 µs. (An earlier run the same
/// session under load 5–8 read 1.75x and 1.07x, per-part differences from −48 to 235 µs:
/// load still moves these rows more than the paired method removes.)
///
/// First figures (2026-12-02, release, `--repeat 3 bridge` six times, machine under load
/// 5–10, so indicative only; against the threaded C MQTT hop, as differences of medians):
/// the NotifyBus hop p50 is the C bridge's within noise (medians 0.81–1.09x), and "C bridge hop minus local post" reads 0.79–1.55x the C MQTT
/// hop (NotifyBus's row 0.22–1.23x in the same runs: a difference of two medians, which
/// load swings). Per post, which load does not move: system calls (strace) C bridge A
/// 8.2, B 9.2, notifyd A 8.8, B 9.2 (`profile-bridge --syscalls`); mallocs (uprobes,
/// `profile-bridge --allocations`) on the D-Bus thread that publishes, C 11 (all
/// libmosquitto's) and notifyd 17 (6 of them `NameTable.recordPost`'s dictionary
/// updates), on the thread that receives and posts C 18 and notifyd 12, on the thread that
/// confirms C 0 and notifyd 6 (`recordPost` again); pthread mutex locks C 80, 13, 37 and
/// 76, notifyd 72, 13, 62 and 66.
///
/// `Benchmarks/profile-bridge` counts what each notifyd spends per bridged post, which load
/// does not move: instructions (callgrind), or with `--syscalls` system calls, wakeups and
/// CPU time per thread; `--timeline` follows each post through every process.
///
/// Where a bridged post's time goes (`profile-bridge --timeline 300`, 2026-12-01, machine
/// under load, every system call traced: medians in µs, comparable between runs, not
/// absolute; before → after the bridge's confirmation and locking changes, run back to
/// back): dbus-daemon A routes it (39 → 34), notifyd A reads it (11 → 9) and works until
/// it writes the PUBLISH (47 → 33), mosquitto runs (83 → 57) and routes it (31 → 26),
/// notifyd B waits to run (82 → 64), reads it (14 → 12) and works until its `Posted` goes
/// out (50 → 33), dbus-daemon B routes it (37 → 33). notifyd B now confirms a post by its
/// own copy coming back from the bus instead of a `Peer.Ping` through a pool task, and
/// writes the PUBACKs from the D-Bus thread that sees it: per post, B's system calls
/// 23.7 → 9.8 and wakeups 6.0 → 2.1 (`profile-bridge --syscalls`), which leaves the two
/// cores to mosquitto, dbus-daemon B and the watcher. notifyd A no longer spins on the
/// client's lock when the PUBACK comes while its D-Bus thread writes the PUBLISH, nor
/// writes libmosquitto's wake byte first (9.0 → 8.1 system calls). The C hop has four
/// handoffs and two libmosquitto clients' work; the bridge's hop minus a local post still
/// carries one more dbus-daemon pass and the two notifyds' work.
///
/// 2026-12-01 night, machine under load 4–9: neither notifyd hops between threads (A's
/// D-Bus thread reads the post and writes the PUBLISH; B's connection thread reads it and
/// sends the post), and each one's read→write work is about one dbus-daemon routing pass
/// (`--timeline`, three interleaved runs, as a ratio to the unchanged dbus-daemon and
/// mosquitto routing medians of the same run: A 1.20, 1.17, 1.04; B 1.19, 1.09, 1.04 before
/// the topic memo, the duplicate filter in place and the cached interface; B 1.02, 0.99,
/// 0.92 after; mallocs per post on B's connection thread 26.0/23.7 → 18.1/18.5, on A's
/// D-Bus thread 25.9/24.6 → 23.0/22.4). The target leaves 0.3 C hops for all the bridge
/// adds to the C hop: one dbus-daemon pass (wakeup and routing) and two read→write steps,
/// against the C hop's two in-process wakeups and its clients' libmosquitto calls.
enum BridgeSuite: BenchmarkSuite {
  static let name = "bridge"
  static let hopName: NotifyName = "bench.bridge.hop"

  static func run(scale: Double) async throws -> [BenchmarkRow] {
    // Unbounded broker queues: the rate run must not lose messages to a slow subscriber.
    let broker = try MosquittoBroker(persistence: false, extraLines: ["max_queued_messages 0"])
    let hostA = try await Host(broker: broker)
    let hostB = try await Host(broker: broker)
    let count = max(200, Int(2000 * scale))
    let rateCount = max(1000, Int(10_000 * scale))
    let rounds = 3
    let poster = try await NotifyCenter.connect(to: .address(hostA.bus.address))
    let localPoster = try await NotifyCenter.connect(to: .address(hostB.bus.address))
    let receiver = try await NotifyCenter.connect(to: .address(hostB.bus.address))
    try await warmUp(poster, receiver)
    // The C journey: buses of its own (the notifyds watch every `Posted` of theirs), the
    // same broker, its own namespace (`bench.cbridge`, so neither side hears the other).
    let cBusA = try PrivateBus()
    let cBusB = try PrivateBus()
    guard
      let journey = cbridge_open(
        cBusA.address.rawValue, cBusB.address.rawValue, "127.0.0.1", CInt(broker.port))
    else { throw DBusError(.failed, "the C bridges did not start") }
    defer {
      cbridge_close(journey)
      withExtendedLifetime((cBusA, cBusB)) {}
    }

    // The C MQTT pairs are opened once per run, as the C journey is, so that no block
    // follows a connection's set-up or teardown.
    guard
      let cPair = cmqtt_open("127.0.0.1", CInt(broker.port), "bench/c/hop", 0),
      let cThreadedPair = cmqtt_open("127.0.0.1", CInt(broker.port), "bench/c/threaded", 1)
    else { throw DBusError(.failed, "the C MQTT clients did not connect") }
    defer {
      cmqtt_close(cPair)
      cmqtt_close(cThreadedPair)
    }

    var latencies: [Block: [Double]] = [:]
    // Per block pair (one part of a round): the hop's median minus the local post's.
    var bridgeAdds: [Double] = []
    var cBridgeAdds: [Double] = []
    var bridgeRates: [Double] = []
    var localRates: [Double] = []
    var cRates: [Double] = []
    var cBridgeRates: [Double] = []
    // Each round takes the six latencies in short alternating blocks, their order shifted
    // by one every part, so that a burst of load on a shared machine lands on all of them
    // alike and no peer always follows the same one, then the four rates.
    let blocks = 4
    let block = max(50, count / blocks)
    var samples = [Double](repeating: 0, count: block)
    for round in 0..<rounds {
      for part in 0..<blocks {
        var medians: [Block: Double] = [:]
        for offset in 0..<Block.allCases.count {
          let kind = Block.allCases[(round * blocks + part + offset) % Block.allCases.count]
          let taken: [Double]
          switch kind {
          case .bridge, .local:
            taken = try await NotifySuite.latency(
              from: kind == .bridge ? poster : localPoster, to: receiver, name: hopName,
              count: block, timeout: 10)
          case .cMQTT, .cMQTTThreaded:
            guard
              cmqtt_hop_samples(kind == .cMQTT ? cPair : cThreadedPair, CInt(block), &samples) == 0
            else { throw DBusError(.failed, "the C MQTT clients failed") }
            taken = Array(samples.dropFirst(block / 10))
          case .cBridge:
            guard cbridge_hop_samples(journey, CInt(block), &samples) == 0 else {
              throw DBusError(.failed, "the C bridges did not carry a post within 10 s")
            }
            taken = Array(samples.dropFirst(block / 10))
          case .cLocal:
            guard cbridge_local_samples(journey, CInt(block), &samples) == 0 else {
              throw DBusError(.failed, "the C handler did not run within 10 s")
            }
            taken = Array(samples.dropFirst(block / 10))
          }
          latencies[kind, default: []] += taken
          medians[kind] = median(taken)
        }
        bridgeAdds.append(medians[.bridge]! - medians[.local]!)
        cBridgeAdds.append(medians[.cBridge]! - medians[.cLocal]!)
      }
      bridgeRates.append(try await rate(poster, receiver, count: rateCount, name: "rate\(round)"))
      localRates.append(
        try await rate(localPoster, receiver, count: rateCount, name: "local\(round)"))
      let cRate = cmqtt_hop_rate(cPair, CInt(rateCount))
      guard cRate > 0 else { throw DBusError(.failed, "the C MQTT clients failed") }
      cRates.append(cRate)
      let cBridgeRate = cbridge_hop_rate(journey, CInt(rateCount))
      guard cBridgeRate > 0 else { throw DBusError(.failed, "the C bridges lost posts") }
      cBridgeRates.append(cBridgeRate)
    }
    await poster.close()
    await localPoster.close()
    await receiver.close()
    await hostA.stop()
    await hostB.stop()
    let bridged = Percentiles(latencies[.bridge]!)
    let baseline = Percentiles(latencies[.cMQTT]!)
    let threadedBaseline = Percentiles(latencies[.cMQTTThreaded]!)
    let cName = "C libmosquitto pub → sub"
    let localLatency = Percentiles(latencies[.local]!)
    let cBridged = Percentiles(latencies[.cBridge]!)
    let cLocalLatency = Percentiles(latencies[.cLocal]!)
    let cBridgeName = "C bridge"
    // The spread of the per-block differences the "minus local post" rows take the median
    // of (the report has no column for it).
    let spread = { (values: [Double]) in
      "\(Int(values.min()!.rounded()))–\(Int(values.max()!.rounded())) µs"
    }
    fputs(
      "bridge: hop minus local post, per block pair: NotifyBus \(spread(bridgeAdds)), "
        + "C bridge \(spread(cBridgeAdds)) (\(bridgeAdds.count) pairs)\n", stderr)
    // Issue 16's latency target is on what the bridge adds to a post, against the C MQTT
    // hop: the hop minus the same post made on B itself, taken per pair of neighbouring
    // blocks (the median of the per-pair differences of the blocks' medians: a paired
    // estimate, steadier under load than the difference of the two overall medians). The
    // whole hop also carries that local post (D-Bus to the handler), which alone is slower
    // than the C MQTT hop, so its ratio to the C hop is shown without a target. Beside the
    // C MQTT hop, each row shows the same figure of the C bridge's journey (the `C bridge`
    // rows, below, are that journey against the C MQTT hop: what the architecture costs
    // when written in C).
    return [
      BenchmarkRow(
        name: "bridge hop A → B p50", unit: "µs", subject: bridged[0.5], baselineName: cName,
        baseline: baseline[0.5], higherIsBetter: false, target: nil,
        secondBaselineName: cBridgeName, secondBaseline: cBridged[0.5]),
      BenchmarkRow(
        name: "bridge hop A → B p99", unit: "µs", subject: bridged[0.99], baselineName: cName,
        baseline: baseline[0.99], higherIsBetter: false, target: nil,
        secondBaselineName: cBridgeName, secondBaseline: cBridged[0.99]),
      BenchmarkRow(
        name: "bridge hop A → B sustained", unit: "posts/s", subject: median(bridgeRates),
        baselineName: cName, baseline: median(cRates), higherIsBetter: true, target: 0.8,
        secondBaselineName: cBridgeName, secondBaseline: median(cBridgeRates)),
      // What the bridge adds to a post: the hop minus the same post made on B itself
      // (whose D-Bus delivery to the handler the hop also includes): notifyd A hearing the
      // post, the MQTT hop, and notifyd B posting it.
      BenchmarkRow(
        name: "bridge hop minus local post p50", unit: "µs",
        subject: median(bridgeAdds), baselineName: cName, baseline: baseline[0.5],
        higherIsBetter: false, target: 1.3, secondBaselineName: cBridgeName,
        secondBaseline: median(cBridgeAdds)),
      BenchmarkRow(
        name: "local post → handler on B p50", unit: "µs", subject: localLatency[0.5],
        baselineName: cName, baseline: baseline[0.5], higherIsBetter: false, target: nil,
        secondBaselineName: "C libdbus post → handler", secondBaseline: cLocalLatency[0.5]),
      BenchmarkRow(
        name: "local post → handler on B p99", unit: "µs", subject: localLatency[0.99],
        baselineName: cName, baseline: baseline[0.99], higherIsBetter: false, target: nil,
        secondBaselineName: "C libdbus post → handler", secondBaseline: cLocalLatency[0.99]),
      BenchmarkRow(
        name: "local posts on B sustained", unit: "posts/s", subject: median(localRates),
        baselineName: cName, baseline: median(cRates), higherIsBetter: true, target: nil),
      // The architecture's floor: the same journey written in C (no NotifyBus code in it).
      BenchmarkRow(
        name: "C bridge hop A → B p50", unit: "µs", subject: cBridged[0.5], baselineName: cName,
        baseline: baseline[0.5], higherIsBetter: false, target: nil),
      BenchmarkRow(
        name: "C bridge hop A → B p99", unit: "µs", subject: cBridged[0.99],
        baselineName: cName, baseline: baseline[0.99], higherIsBetter: false, target: nil),
      BenchmarkRow(
        name: "C bridge hop minus local post p50", unit: "µs", subject: median(cBridgeAdds),
        baselineName: cName, baseline: baseline[0.5], higherIsBetter: false, target: nil),
      // For this session only: the old baseline, libmosquitto's threaded loop (a publish
      // wakes the loop's thread to write it; the clock stops once the callback has woken
      // the publishing thread), so that the move of the rows above is visible.
      BenchmarkRow(
        name: "C libmosquitto pub → sub p50, threaded loop", unit: "µs",
        subject: threadedBaseline[0.5], baselineName: cName, baseline: baseline[0.5],
        higherIsBetter: false, target: nil),
    ]
  }

  /// The latency blocks of a part, in the order of the first part.
  enum Block: CaseIterable {
    case bridge, local, cMQTT, cMQTTThreaded, cBridge, cLocal
  }

  /// One "host": a private bus and a `NotifyServer` bridging `bench.` to the broker.
  final class Host: Sendable {
    let bus: PrivateBus
    let server: NotifyServer

    init(broker: MosquittoBroker) async throws {
      bus = try PrivateBus()
      let connection = try await BusConnection.connect(to: .address(bus.address))
      var configuration = NotifyServer.Configuration(log: { _ in })
      configuration.bridges = [
        BridgeConfiguration(
          broker: try BrokerAddress(parsing: broker.url), namespaces: ["bench.bridge"])
      ]
      server = try await NotifyServer.start(on: connection, configuration: configuration)
    }

    func stop() async { await server.stop() }
  }

  /// Posts until B sees one: both bridges are connected and subscribed.
  static func warmUp(_ poster: NotifyCenter, _ receiver: NotifyCenter) async throws {
    let token = try await receiver.registerCheck(hopName)
    _ = try receiver.check(token)
    let deadline = MonotonicClock.now + 30_000_000_000
    while MonotonicClock.now < deadline {
      try poster.post(hopName)
      try await Task.sleep(for: .milliseconds(50))
      if try receiver.check(token) {
        try receiver.cancel(token)
        return
      }
    }
    throw DBusError(.timeout, "the bridge did not carry a post within 30 s")
  }

  /// Posts `count` times on A as fast as the bus takes them, alternating two names (so
  /// that no message repeats the one before it, as with traffic over many names);
  /// posts per second arriving on B, up to the handler run for the last.
  static func rate(
    _ poster: NotifyCenter, _ receiver: NotifyCenter, count: Int, name suffix: String
  )
    async throws -> Double
  {
    let names = try [NotifyName("bench.bridge.\(suffix)a"), NotifyName("bench.bridge.\(suffix)b")]
    let done = DispatchSemaphore(value: 0)
    let finished = Atomic<Int>(0)
    let tokens = Mutex<[NotifyToken]>([])
    let queue = DispatchQueue(label: "rate")
    let seen = { @Sendable in
      tokens.withLock { $0.reduce(0) { $0 + ((try? receiver.postCount($1)) ?? 0) } }
    }
    for name in names {
      let token = try await receiver.register(name, queue: queue) { _ in
        if seen() >= UInt64(count),
          finished.compareExchange(expected: 0, desired: MonotonicClock.now, ordering: .relaxed)
            .exchanged
        {
          done.signal()
        }
      }
      tokens.withLock { $0.append(token) }
    }
    let start = MonotonicClock.now
    for index in 0..<count { try poster.post(names[index % 2]) }
    let waited = await Task.detached { done.wait(timeout: .now() + 120) }.value
    // Read before the cancel: a cancelled token has no count.
    let arrived = seen()
    for token in tokens.withLock({ $0 }) { try receiver.cancel(token) }
    guard waited == .success else {
      throw DBusError(.timeout, "B saw \(arrived) of \(count) posts")
    }
    return Double(count) / (Double(finished.load(ordering: .relaxed) - start) / 1e9)
  }
}
