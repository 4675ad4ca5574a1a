import BusTestSupport
import CBaseline
import CSDBusBaseline
import DBus
import Notify
import NotifyServer
import SystemSupport

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

/// A `GetState` round trip through notifyd (`NotifyCenter.state(of:)` to a `NotifyServer`)
/// against a blocking libdbus call to a C service answering the same question from a
/// table; both services run on their own connection and thread in this process.
///
/// The C client waits for each reply on the thread that owns its connection; the Swift
/// client does the same from a task on its connection's executor
/// (`BusConnection.taskExecutor`). A row without a target gives the same calls made from
/// the main actor, which a reply reaches through one more thread. Two more rows split the
/// difference: the Swift client calling the C service (from its connection's executor too,
/// as the target row's client calls), and the C client calling notifyd. The second peer is
/// the same client and service written on sd-bus.
///
/// The target rows (p50, p99, calls/s) take their two sides in short alternating blocks:
/// ``targetBlock`` calls of the Swift client, then as many of the C client, then C before
/// Swift, and so on, each client on the connection it keeps for the whole run, the first
/// ``warmUpCalls`` of every block dropped on both sides, and the samples of all blocks
/// pooled per side. Before, each side made 5,000 calls in a block of its own (about 0.3 s),
/// always in the same order, and the row flipped between 1.05x and 1.25x in two quiet runs
/// twenty minutes apart: a burst of other work, a frequency change or a vCPU's halt-polling
/// lasting a fraction of a second landed on one side only. Blocks of 250 calls (about 15 ms)
/// in both orders spread such a stretch over both sides. The diagnostic rows keep a block
/// of their own per round; their ratios are against the C client's pooled p50.
enum NotifydSuite: BenchmarkSuite {
  static let name = "notifyd"

  static let cService = "org.notifybus.CBaseline"
  static let sdService = "org.notifybus.CSDBusBaseline"

  /// Calls in one block of a target row's side.
  static let targetBlock = 250
  /// Calls at the start of each block left out of the samples: the first call after the
  /// other side's block finds colder caches and a thread that may have to be woken.
  static let warmUpCalls = 10

  static func run(scale: Double) async throws -> [BenchmarkRow] {
    let bus = try PrivateBus(outgoingLimit: benchmarkOutgoingLimit)
    let count = max(300, Int(5000 * scale))
    let rounds = 3
    let serverConnection = try await BusConnection.connect(to: .address(bus.address))
    let server = try await NotifyServer.start(
      on: serverConnection, configuration: .init(log: { _ in }))
    let center = try await NotifyCenter.connect(to: .address(bus.address))
    try await center.setState(42, for: "bench.state")
    guard let service = cbaseline_start_service(bus.address.rawValue, cService) else {
      throw DBusError(.failed, "the C service did not start")
    }
    defer { cbaseline_stop_service(service) }
    guard let sdServer = csdbus_start_service(bus.address.rawValue, sdService) else {
      throw DBusError(.failed, "the C sd-bus service did not start")
    }
    defer { csdbus_stop_service(sdServer) }
    guard let cClient = cbaseline_client_open(bus.address.rawValue) else {
      throw DBusError(.failed, "the C client did not connect")
    }
    defer { cbaseline_client_close(cClient) }

    let getState: @Sendable () async throws -> Void = {
      guard try await center.state(of: "bench.state") == 42 else {
        throw DBusError(.failed, "notifyd answered a wrong state")
      }
    }
    let swiftBlock: @Sendable (Int) async throws -> Samples = { count in
      try await Task(executorPreference: center.connection.taskExecutor) {
        try await samples(count, getState)
      }.value
    }
    let cBlock = { (count: Int) throws -> Samples in
      try cSamples(cClient, service: cService, count: count)
    }
    var swift = Samples()
    var c = Samples()
    var swiftMainActor: [Measurement] = []
    var swiftToC: [Measurement] = []
    var cToSwift: [Measurement] = []
    var sd: [Measurement] = []
    let blocks = max(2, count / targetBlock)
    for _ in 0..<rounds {
      for block in 0..<blocks {
        if block % 2 == 0 {
          swift.pool(try await swiftBlock(targetBlock), dropping: warmUpCalls)
          c.pool(try cBlock(targetBlock), dropping: warmUpCalls)
        } else {
          c.pool(try cBlock(targetBlock), dropping: warmUpCalls)
          swift.pool(try await swiftBlock(targetBlock), dropping: warmUpCalls)
        }
      }
      swiftMainActor.append(Measurement(try await samples(count, getState)))
      sd.append(try sdRoundTrips(bus.address, count: count))
      let call = Message.methodCall(
        destination: try BusName(cService), path: "/org/notifybus/CBaseline",
        interface: "org.notifybus.CBaseline", member: "GetState", body: [.string("bench.state")])
      let connection = center.connection
      swiftToC.append(
        Measurement(
          try await Task(executorPreference: connection.taskExecutor) {
            try await samples(count) {
              guard try await connection.call(call).body.first == .uint64(42) else {
                throw DBusError(.failed, "the C service answered a wrong state")
              }
            }
          }.value))
      cToSwift.append(
        try cRoundTrips(
          bus.address, service: "org.notifybus.Notify1", path: "/org/notifybus/Notify1",
          interface: "org.notifybus.Notify1", count: count))
    }
    await center.close()
    await server.stop()
    let swiftPool = Measurement(pooled: swift)
    let cPool = Measurement(pooled: c)
    let baseline = "C client → C service"
    let sdBaseline = "C sd-bus client → service"
    return [
      BenchmarkRow(
        name: "GetState round trip p50", unit: "µs", subject: swiftPool.p50,
        baselineName: baseline, baseline: cPool.p50, higherIsBetter: false,
        target: 1.1, secondBaselineName: sdBaseline, secondBaseline: median(sd.map(\.p50))),
      BenchmarkRow(
        name: "GetState round trip p99", unit: "µs", subject: swiftPool.p99,
        baselineName: baseline, baseline: cPool.p99, higherIsBetter: false,
        target: nil, secondBaselineName: sdBaseline, secondBaseline: median(sd.map(\.p99))),
      BenchmarkRow(
        name: "GetState calls, one at a time", unit: "calls/s", subject: swiftPool.rate,
        baselineName: baseline, baseline: cPool.rate, higherIsBetter: true,
        target: nil, secondBaselineName: sdBaseline, secondBaseline: median(sd.map(\.rate))),
      BenchmarkRow(
        name: "GetState p50, caller on the main actor", unit: "µs",
        subject: median(swiftMainActor.map(\.p50)), baselineName: baseline,
        baseline: cPool.p50, higherIsBetter: false, target: nil),
      BenchmarkRow(
        name: "GetState p50, Swift client → C service", unit: "µs",
        subject: median(swiftToC.map(\.p50)), baselineName: baseline,
        baseline: cPool.p50, higherIsBetter: false, target: nil),
      BenchmarkRow(
        name: "GetState p50, C client → notifyd", unit: "µs",
        subject: median(cToSwift.map(\.p50)), baselineName: baseline,
        baseline: cPool.p50, higherIsBetter: false, target: nil),
    ]
  }

  /// Round trips (µs) and the time they took, from one block or pooled from several.
  struct Samples {
    var roundTrips: [Double] = []
    var seconds: Double = 0
    /// Calls made, including those left out of `roundTrips`.
    var calls = 0

    /// Adds `block`'s round trips but its first `dropped`, and all its calls and time.
    mutating func pool(_ block: Samples, dropping dropped: Int) {
      roundTrips += block.roundTrips.dropFirst(dropped)
      seconds += block.seconds
      calls += block.calls
    }
  }

  /// Round-trip percentiles (µs) and calls per second.
  struct Measurement {
    var p50: Double
    var p99: Double
    var rate: Double

    /// One block's figures, its first tenth dropped as warm-up.
    init(_ block: Samples) {
      var kept = Samples()
      kept.pool(block, dropping: block.roundTrips.count / 10)
      self.init(pooled: kept)
    }

    /// The figures of samples already pooled, nothing dropped.
    init(pooled: Samples) {
      let percentiles = Percentiles(pooled.roundTrips)
      p50 = percentiles[0.5]
      p99 = percentiles[0.99]
      rate = Double(pooled.calls) / pooled.seconds
    }
  }

  private static func samples(_ count: Int, _ body: () async throws -> Void) async throws
    -> Samples
  {
    var roundTrips: [Double] = []
    roundTrips.reserveCapacity(count)
    let start = MonotonicClock.now
    for _ in 0..<count {
      let before = MonotonicClock.now
      try await body()
      roundTrips.append(Double(MonotonicClock.now - before) / 1000)
    }
    return Samples(
      roundTrips: roundTrips, seconds: Double(MonotonicClock.now - start) / 1e9, calls: count)
  }

  /// `count` calls of the C client on its kept connection to the C service.
  private static func cSamples(_ client: UnsafeMutableRawPointer, service: String, count: Int)
    throws -> Samples
  {
    var roundTrips = [Double](repeating: 0, count: count)
    let start = MonotonicClock.now
    guard
      cbaseline_client_call_samples(
        client, service, "/org/notifybus/CBaseline", "org.notifybus.CBaseline", 42,
        CInt(count), &roundTrips) == 0
    else { throw DBusError(.failed, "the C client's calls to \(service) failed") }
    return Samples(
      roundTrips: roundTrips, seconds: Double(MonotonicClock.now - start) / 1e9, calls: count)
  }

  private static func sdRoundTrips(_ address: BusAddress, count: Int) throws -> Measurement {
    var roundTrips = [Double](repeating: 0, count: count)
    let start = MonotonicClock.now
    guard
      csdbus_call_samples(
        address.rawValue, sdService, "/org/notifybus/CBaseline", "org.notifybus.CBaseline", 42,
        CInt(count), &roundTrips) == 0
    else { throw DBusError(.failed, "the C sd-bus client's calls to \(sdService) failed") }
    return Measurement(
      Samples(
        roundTrips: roundTrips, seconds: Double(MonotonicClock.now - start) / 1e9, calls: count))
  }

  private static func cRoundTrips(
    _ address: BusAddress, service: String, path: String, interface: String, count: Int
  ) throws -> Measurement {
    var roundTrips = [Double](repeating: 0, count: count)
    let start = MonotonicClock.now
    guard
      cbaseline_call_samples(
        address.rawValue, service, path, interface, 42, CInt(count), &roundTrips) == 0
    else { throw DBusError(.failed, "the C client's calls to \(service) failed") }
    return Measurement(
      Samples(
        roundTrips: roundTrips, seconds: Double(MonotonicClock.now - start) / 1e9, calls: count))
  }
}

// MARK: - Profiling roles (Benchmarks/profile-notifyd)

extension NotifydSuite {
  /// `--child getstate-serve ADDRESS swift|c`: serves `GetState` on the bus at `ADDRESS`
  /// (notifyd's `NotifyServer`, or the C service) with `bench.state` = 42, prints `ready`
  /// and serves until killed.
  ///
  /// `--child getstate-call ADDRESS notifyd|c MODE COUNT`: connects to the bus, makes a few
  /// calls to warm up, prints `ready`, waits for a line on standard input, makes `COUNT`
  /// `GetState` calls to notifyd or to the C service, one at a time, prints `done <ns>` and
  /// waits for standard input to end. `MODE` says where the Swift caller runs:
  /// `task-executor` (a task on the connection's executor), `center` (the target row's
  /// caller: `NotifyCenter.state(of:)` from a task on its connection's executor; notifyd
  /// only), `main-actor`, `pool` (the global concurrent pool); `c-client` makes the calls
  /// with C libdbus, the baseline.
  static func child(_ arguments: [String]) async throws {
    let address = try BusAddress(arguments[1])
    switch arguments[0] {
    case "getstate-serve" where arguments[2] == "c":
      guard cbaseline_start_service(address.rawValue, cService) != nil else {
        throw DBusError(.failed, "the C service did not start")
      }
      print("ready")
      fflush(stdout)
      while true { pause() }
    case "getstate-serve":
      let connection = try await BusConnection.connect(to: .address(address))
      let server = try await NotifyServer.start(on: connection, configuration: .init(log: { _ in }))
      let center = try await NotifyCenter.connect(to: .address(address))
      try await center.setState(42, for: "bench.state")
      await center.close()
      print("ready")
      fflush(stdout)
      withExtendedLifetime(server) {
        while true { pause() }
      }
    default:
      try await profiledCalls(
        address, toC: arguments[2] == "c", mode: arguments[3], count: Int(arguments[4]) ?? 0)
    }
  }

  private static func profiledCalls(_ address: BusAddress, toC: Bool, mode: String, count: Int)
    async throws
  {
    let (service, path, interface) =
      toC
      ? (cService, "/org/notifybus/CBaseline", "org.notifybus.CBaseline")
      : ("org.notifybus.Notify1", "/org/notifybus/Notify1", "org.notifybus.Notify1")
    let run: (Int) async throws -> Void
    let close: () async -> Void
    if mode == "c-client" {
      run = { count in
        _ = try cRoundTrips(
          address, service: service, path: path, interface: interface, count: count)
      }
      close = {}
    } else if mode == "center" {
      // The target row's caller: NotifyCenter.state(of:) from a task on its connection's
      // executor.
      let center = try await NotifyCenter.connect(to: .address(address))
      run = { count in
        try await Task(executorPreference: center.connection.taskExecutor) {
          for _ in 0..<count {
            guard try await center.state(of: "bench.state") == 42 else {
              throw DBusError(.failed, "notifyd answered a wrong state")
            }
          }
        }.value
      }
      close = { await center.close() }
    } else {
      let connection = try await BusConnection.connect(to: .address(address))
      let call = Message.methodCall(
        destination: try BusName(service), path: try ObjectPath(path),
        interface: try InterfaceName(interface), member: "GetState",
        body: [.string("bench.state")])
      let calls: @Sendable (Int) async throws -> Void = { count in
        for _ in 0..<count {
          guard try await connection.call(call).body.first == .uint64(42) else {
            throw DBusError(.failed, "\(service) answered a wrong state")
          }
        }
      }
      switch mode {
      case "task-executor":
        run = { count in
          try await Task(executorPreference: connection.taskExecutor) { try await calls(count) }
            .value
        }
      case "pool":
        run = { count in try await Task.detached { try await calls(count) }.value }
      case "main-actor":
        run = { count in try await mainActorCalls(count, calls) }
      default:
        await connection.close()
        throw DBusError(.invalidArgs, "unknown mode '\(mode)'")
      }
      close = { await connection.close() }
    }
    try await run(100)
    print("ready")
    fflush(stdout)
    _ = await Task.detached { readLine() }.value
    let start = MonotonicClock.now
    try await run(count)
    print("done \(MonotonicClock.now - start)")
    fflush(stdout)
    _ = await Task.detached { while readLine() != nil {} }.value
    await close()
  }

  @MainActor
  private static func mainActorCalls(_ count: Int, _ calls: (Int) async throws -> Void)
    async throws
  {
    try await calls(count)
  }
}
