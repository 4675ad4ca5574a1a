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
enum NotifydSuite: BenchmarkSuite {
  static let name = "notifyd"

  static let cService = "org.notifybus.CBaseline"
  static let sdService = "org.notifybus.CSDBusBaseline"

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

    var swift: [Measurement] = []
    var swiftMainActor: [Measurement] = []
    var c: [Measurement] = []
    var swiftToC: [Measurement] = []
    var cToSwift: [Measurement] = []
    var sd: [Measurement] = []
    for _ in 0..<rounds {
      let getState: @Sendable () async throws -> Void = {
        guard try await center.state(of: "bench.state") == 42 else {
          throw DBusError(.failed, "notifyd answered a wrong state")
        }
      }
      swift.append(
        try await Task(executorPreference: center.connection.taskExecutor) {
          try await measure(count, getState)
        }.value)
      swiftMainActor.append(try await measure(count, getState))
      c.append(
        try cRoundTrips(
          bus.address, service: cService, path: "/org/notifybus/CBaseline",
          interface: "org.notifybus.CBaseline", count: count))
      sd.append(try sdRoundTrips(bus.address, count: count))
      let call = Message.methodCall(
        destination: try BusName(cService), path: "/org/notifybus/CBaseline",
        interface: "org.notifybus.CBaseline", member: "GetState", body: [.string("bench.state")])
      let connection = center.connection
      swiftToC.append(
        try await Task(executorPreference: connection.taskExecutor) {
          try await measure(count) {
            guard try await connection.call(call).body.first == .uint64(42) else {
              throw DBusError(.failed, "the C service answered a wrong state")
            }
          }
        }.value)
      cToSwift.append(
        try cRoundTrips(
          bus.address, service: "org.notifybus.Notify1", path: "/org/notifybus/Notify1",
          interface: "org.notifybus.Notify1", count: count))
    }
    await center.close()
    await server.stop()
    let baseline = "C client → C service"
    let sdBaseline = "C sd-bus client → service"
    return [
      BenchmarkRow(
        name: "GetState round trip p50", unit: "µs", subject: median(swift.map(\.p50)),
        baselineName: baseline, baseline: median(c.map(\.p50)), higherIsBetter: false,
        target: 1.1, secondBaselineName: sdBaseline, secondBaseline: median(sd.map(\.p50))),
      BenchmarkRow(
        name: "GetState round trip p99", unit: "µs", subject: median(swift.map(\.p99)),
        baselineName: baseline, baseline: median(c.map(\.p99)), higherIsBetter: false,
        target: nil, secondBaselineName: sdBaseline, secondBaseline: median(sd.map(\.p99))),
      BenchmarkRow(
        name: "GetState calls, one at a time", unit: "calls/s", subject: median(swift.map(\.rate)),
        baselineName: baseline, baseline: median(c.map(\.rate)), higherIsBetter: true,
        target: nil, secondBaselineName: sdBaseline, secondBaseline: median(sd.map(\.rate))),
      BenchmarkRow(
        name: "GetState p50, caller on the main actor", unit: "µs",
        subject: median(swiftMainActor.map(\.p50)), baselineName: baseline,
        baseline: median(c.map(\.p50)), higherIsBetter: false, target: nil),
      BenchmarkRow(
        name: "GetState p50, Swift client → C service", unit: "µs",
        subject: median(swiftToC.map(\.p50)), baselineName: baseline,
        baseline: median(c.map(\.p50)), higherIsBetter: false, target: nil),
      BenchmarkRow(
        name: "GetState p50, C client → notifyd", unit: "µs",
        subject: median(cToSwift.map(\.p50)), baselineName: baseline,
        baseline: median(c.map(\.p50)), higherIsBetter: false, target: nil),
    ]
  }

  /// Round-trip percentiles (µs, first tenth dropped as warm-up) and calls per second.
  struct Measurement {
    var p50: Double
    var p99: Double
    var rate: Double

    init(_ samples: [Double], seconds: Double) {
      let percentiles = Percentiles(Array(samples.dropFirst(samples.count / 10)))
      p50 = percentiles[0.5]
      p99 = percentiles[0.99]
      rate = Double(samples.count) / seconds
    }
  }

  private static func measure(_ count: Int, _ body: () async throws -> Void) async throws
    -> Measurement
  {
    var samples: [Double] = []
    samples.reserveCapacity(count)
    let start = MonotonicClock.now
    for _ in 0..<count {
      let before = MonotonicClock.now
      try await body()
      samples.append(Double(MonotonicClock.now - before) / 1000)
    }
    return Measurement(samples, seconds: Double(MonotonicClock.now - start) / 1e9)
  }

  private static func sdRoundTrips(_ address: BusAddress, count: Int) throws -> Measurement {
    var samples = [Double](repeating: 0, count: count)
    let start = MonotonicClock.now
    guard
      csdbus_call_samples(
        address.rawValue, sdService, "/org/notifybus/CBaseline", "org.notifybus.CBaseline", 42,
        CInt(count), &samples) == 0
    else { throw DBusError(.failed, "the C sd-bus client's calls to \(sdService) failed") }
    return Measurement(samples, seconds: Double(MonotonicClock.now - start) / 1e9)
  }

  private static func cRoundTrips(
    _ address: BusAddress, service: String, path: String, interface: String, count: Int
  ) throws -> Measurement {
    var samples = [Double](repeating: 0, count: count)
    let start = MonotonicClock.now
    guard
      cbaseline_call_samples(
        address.rawValue, service, path, interface, 42, CInt(count), &samples) == 0
    else { throw DBusError(.failed, "the C client's calls to \(service) failed") }
    return Measurement(samples, seconds: Double(MonotonicClock.now - start) / 1e9)
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
    if mode == "c-client" {
      _ = try cRoundTrips(address, service: service, path: path, interface: interface, count: 100)
      print("ready")
      fflush(stdout)
      _ = readLine()
      let start = MonotonicClock.now
      _ = try cRoundTrips(address, service: service, path: path, interface: interface, count: count)
      print("done \(MonotonicClock.now - start)")
      fflush(stdout)
      while readLine() != nil {}
      return
    }
    if mode == "center" {
      // The target row's caller: NotifyCenter.state(of:) from a task on its connection's
      // executor.
      let center = try await NotifyCenter.connect(to: .address(address))
      let calls: @Sendable (Int) async throws -> Void = { count in
        try await Task(executorPreference: center.connection.taskExecutor) {
          for _ in 0..<count {
            guard try await center.state(of: "bench.state") == 42 else {
              throw DBusError(.failed, "notifyd answered a wrong state")
            }
          }
        }.value
      }
      try await calls(100)
      print("ready")
      fflush(stdout)
      _ = await Task.detached { readLine() }.value
      let start = MonotonicClock.now
      try await calls(count)
      print("done \(MonotonicClock.now - start)")
      fflush(stdout)
      _ = await Task.detached { while readLine() != nil {} }.value
      await center.close()
      return
    }
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
    let run: (Int) async throws -> Void
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
      throw DBusError(.invalidArgs, "unknown mode '\(mode)'")
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
    await connection.close()
  }

  @MainActor
  private static func mainActorCalls(_ count: Int, _ calls: (Int) async throws -> Void)
    async throws
  {
    try await calls(count)
  }
}
