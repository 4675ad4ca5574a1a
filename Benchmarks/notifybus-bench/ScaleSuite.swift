import BusTestSupport
import DBus
import Dispatch
import Notify
import NotifyServer
import NotifyServerFiles
import Synchronization
import SystemSupport

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

/// How the costs of registrations and of notifyd's names grow with their number (issue 18,
/// item 6): every operation on a registration must stay O(1) or O(log n).
///
/// - post → handlers with 1, 10, 100 and 1,000 registrations of one name in one process, and
///   the fan-out cost per registration at 1,000 against 100;
/// - register, cancel and suspend + resume of 1,000, 10,000 and 100,000 registrations of one
///   name, and cancel of 50,000 sharing one file descriptor: the cost per operation against
///   the cost at 1,000, that growth against a bare `Dictionary`'s at the same sizes (what
///   caches alone add), and the whole cancel against a 1 s budget;
/// - notifyd's `GetState` round trip with 10, 1,000 and 100,000 names held;
/// - the resident memory per registration of distinct names, at 10,000 and 100,000, split
///   into the registry's share (one name) and the `DBus` subscriptions' (alone).
enum ScaleSuite: BenchmarkSuite {
  static let name = "scale"

  static func run(scale: Double) async throws -> [BenchmarkRow] {
    let bus = try PrivateBus(outgoingLimit: benchmarkOutgoingLimit)
    var rows = try await fanOutRows(bus.address, posts: max(60, Int(400 * scale)))
    rows += try await registrationRows(bus.address, largest: max(10_000, Int(100_000 * scale)))
    rows += try await getStateRows(calls: max(300, Int(3000 * scale)))
    rows += try memoryRows(bus, largest: max(10_000, Int(100_000 * scale)))
    return rows
  }

  // MARK: - Fan-out

  static let fanOutSizes = [1, 10, 100, 1000]

  private static func fanOutRows(_ address: BusAddress, posts: Int) async throws
    -> [BenchmarkRow]
  {
    let poster = try await NotifyCenter.connect(to: .address(address))
    let receiver = try await NotifyCenter.connect(to: .address(address))
    var p50: [Int: [Double]] = [:]
    for _ in 0..<3 {
      // Each round measures every size, so that drift in the machine's speed hits all alike.
      for size in fanOutSizes {
        let samples = try await fanOut(
          from: poster, to: receiver, registrations: size, posts: posts)
        p50[size, default: []].append(samples[0.5])
      }
    }
    await poster.close()
    await receiver.close()
    let latency = p50.mapValues(median)
    let one = latency[1] ?? .nan
    var rows = fanOutSizes.dropFirst().map { size in
      BenchmarkRow(
        name: "post→handlers p50, \(size) registrations of one name", unit: "µs",
        subject: latency[size] ?? .nan, baselineName: "same, 1 registration", baseline: one,
        higherIsBetter: false, target: nil)
    }
    // What each registration adds to a post's delivery: constant when the fan-out is linear.
    func perRegistration(_ size: Int) -> Double {
      ((latency[size] ?? .nan) - one) / Double(size - 1)
    }
    rows.append(
      BenchmarkRow(
        name: "fan-out per registration, 1000 vs 100", unit: "µs", subject: perRegistration(1000),
        baselineName: "same, at 100", baseline: perRegistration(100), higherIsBetter: false,
        target: 2))
    return rows
  }

  /// Post → the last of `registrations` dispatch handlers of one name (all on one serial
  /// queue), one post at a time; microseconds, the first tenth dropped as warm-up.
  private static func fanOut(
    from poster: NotifyCenter, to receiver: NotifyCenter, registrations: Int, posts: Int
  ) async throws -> Percentiles {
    let name: NotifyName = "bench.scale.fanout"
    let queue = DispatchQueue(label: "scale.fanout")
    let postedAt = Atomic<Int>(0)
    let handled = Atomic<Int>(0)
    let samples = Mutex<[Double]>([])
    let arrived = DispatchSemaphore(value: 0)
    var tokens: [NotifyToken] = []
    for _ in 0..<registrations {
      tokens.append(
        try await receiver.register(name, queue: queue) { _ in
          guard handled.add(1, ordering: .relaxed).newValue == registrations else { return }
          handled.store(0, ordering: .relaxed)
          let now = MonotonicClock.now
          samples.withLock { $0.append(Double(now - postedAt.load(ordering: .relaxed)) / 1000) }
          arrived.signal()
        })
    }
    try await Task.detached {
      for index in 0..<posts {
        postedAt.store(MonotonicClock.now, ordering: .relaxed)
        try poster.post(name)
        guard arrived.wait(timeout: .now() + .seconds(10)) == .success else {
          throw DBusError(.timeout, "post \(index) did not reach all \(registrations) handlers")
        }
      }
    }.value
    for token in tokens { try receiver.cancel(token) }
    return Percentiles(samples.withLock { Array($0.dropFirst(posts / 10)) })
  }

  // MARK: - Register, cancel, suspend and resume

  /// Seconds taken by each operation over `count` registrations of one name.
  struct OperationTimes {
    var register = 0.0
    var suspendResume = 0.0
    var cancel = 0.0
  }

  private static func registrationRows(_ address: BusAddress, largest: Int) async throws
    -> [BenchmarkRow]
  {
    let center = try await NotifyCenter.connect(to: .address(address))
    // Distinct and sorted: with --quick the middle size is the smallest.
    let sizes = Set([1000, largest / 10, largest]).sorted()
    let shared = largest / 2
    var times: [Int: [OperationTimes]] = [:]
    var sharedTimes: [OperationTimes] = []
    var small: [OperationTimes] = []
    for _ in 0..<3 {
      for size in sizes { times[size, default: []].append(try await operations(center, size)) }
      sharedTimes.append(try await operations(center, shared, sharingDescriptor: true))
      // 1,000 sharing a descriptor: the baseline of the shared-descriptor row.
      small.append(try await operations(center, 1000, sharingDescriptor: true))
    }
    await center.close()

    // Microseconds per operation, the best of the rounds: load from other processes only
    // ever adds time, and the question is how the cost itself grows.
    func perOperation(
      _ runs: [OperationTimes], _ size: Int, _ time: KeyPath<OperationTimes, Double>
    ) -> Double {
      (runs.map { $0[keyPath: time] }.min() ?? .nan) / Double(size) * 1e6
    }

    // A bare Swift dictionary of registration-sized values, at the same sizes: how much caches
    // and TLBs alone make an O(1) lookup cost grow at 100 times the size. An operation is
    // linear overall when its cost per operation grows no more than twice as much as that.
    func reference(_ size: Int) -> Double {
      (0..<3).map { _ in dictionaryUpdates(size) }.min() ?? .nan
    }
    let referenceAtOne = reference(1000)
    var rows: [BenchmarkRow] = []
    let one = times[1000] ?? []
    func growthRows(
      _ label: String, _ size: Int, _ what: String, subject: Double, baseline: Double,
      growthTarget: Bool
    ) -> [BenchmarkRow] {
      var rows = [
        BenchmarkRow(
          name: "\(label) per op, \(size) vs 1000 \(what)", unit: "µs", subject: subject,
          baselineName: "same, 1000", baseline: baseline, higherIsBetter: false, target: nil)
      ]
      if growthTarget {
        rows.append(
          BenchmarkRow(
            name: "\(label) growth, \(size) vs 1000 \(what), vs a Dictionary's", unit: "x",
            subject: subject / baseline, baselineName: "Dictionary update",
            baseline: reference(size) / referenceAtOne, higherIsBetter: false, target: 2))
      }
      return rows
    }
    for (label, time) in [
      ("register", \OperationTimes.register), ("suspend+resume", \.suspendResume),
      ("cancel", \.cancel),
    ] {
      for size in sizes.dropFirst() {
        rows += growthRows(
          label, size, "of one name", subject: perOperation(times[size] ?? [], size, time),
          baseline: perOperation(one, 1000, time), growthTarget: size == largest)
      }
    }
    rows += growthRows(
      "cancel", shared, "sharing a descriptor",
      subject: perOperation(sharedTimes, shared, \.cancel),
      baseline: perOperation(small, 1000, \.cancel), growthTarget: true)
    rows += [
      BenchmarkRow(
        name: "cancel of \(largest) registrations of one name", unit: "ms",
        subject: median((times[largest] ?? []).map(\.cancel)) * 1000, baselineName: "1 s budget",
        baseline: 1000, higherIsBetter: false, target: 1),
      BenchmarkRow(
        name: "cancel of \(shared) registrations sharing a descriptor", unit: "ms",
        subject: median(sharedTimes.map(\.cancel)) * 1000, baselineName: "1 s budget",
        baseline: 1000, higherIsBetter: false, target: 1),
    ]
    return rows
  }

  /// Registers `count` registrations of one name (check registrations, or pipes sharing one
  /// descriptor), suspends and resumes each, then cancels them all in the order they were made.
  private static func operations(
    _ center: NotifyCenter, _ count: Int, sharingDescriptor: Bool = false
  ) async throws -> OperationTimes {
    let name: NotifyName = sharingDescriptor ? "bench.scale.pipe" : "bench.scale.cancel"
    var tokens: [NotifyToken] = []
    tokens.reserveCapacity(count)
    var times = OperationTimes()
    var start = MonotonicClock.now
    if sharingDescriptor {
      let (first, descriptor) = try await center.registerFileDescriptor(name)
      tokens.append(first)
      for _ in 1..<count {
        tokens.append(try await center.registerFileDescriptor(name, reusing: descriptor).token)
      }
    } else {
      for _ in 0..<count { tokens.append(try await center.registerCheck(name)) }
    }
    times.register = seconds(since: start)
    start = MonotonicClock.now
    for token in tokens { try center.suspend(token) }
    for token in tokens { try center.resume(token) }
    times.suspendResume = seconds(since: start)
    start = MonotonicClock.now
    for token in tokens { try center.cancel(token) }
    times.cancel = seconds(since: start)
    guard center.statistics.registrations == 0 else {
      throw DBusError(.failed, "registrations are left after cancelling them all")
    }
    return times
  }

  /// Microseconds per update of one field of a 128-byte value in a dictionary of `count`
  /// entries keyed by token, in the order the keys were inserted.
  private static func dictionaryUpdates(_ count: Int) -> Double {
    struct Value {
      var fields: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0)
      var more: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0)
    }
    let keys = (1...Int32(count)).map { NotifyToken(rawValue: $0) }
    var table: [NotifyToken: Value] = [:]
    for key in keys { table[key] = Value() }
    let start = MonotonicClock.now
    for key in keys { table[key]?.fields.0 += 1 }
    for key in keys { table[key]?.fields.0 -= 1 }
    let elapsed = seconds(since: start)
    // Two in-place updates per key, as a suspend and its resume make.
    return withExtendedLifetime(table) { elapsed / Double(count) * 1e6 }
  }

  private static func seconds(since start: Int) -> Double {
    Double(MonotonicClock.now - start) / 1e9
  }

  // MARK: - notifyd's names

  static let heldSizes = [10, 1000, 100_000]

  /// notifyd with 10, 1,000 and 100,000 names holding a state (loaded from its state file, as
  /// after a restart), each on its own bus, measured in turn in every round.
  private static func getStateRows(calls: Int) async throws -> [BenchmarkRow] {
    let directory = TemporaryDirectory("notifybus-bench-scale")
    var services: [(size: Int, bus: PrivateBus, server: NotifyServer, center: NotifyCenter)] = []
    for size in heldSizes {
      let store = StateStore(path: directory.path("notifyd-\(size).state"))
      try store.save(
        (0..<size).map { index in
          StateRecord(
            name: index == 0 ? "bench.state" : "bench.scale.held\(index)",
            state: index == 0 ? 42 : UInt64(index), setTimeNanoseconds: 1)
        })
      let bus = try PrivateBus(outgoingLimit: benchmarkOutgoingLimit)
      let server = try await NotifyServer.start(
        on: try await BusConnection.connect(to: .address(bus.address)),
        configuration: .init(store: store, capacity: size + 1, log: { _ in }))
      let center = try await NotifyCenter.connect(to: .address(bus.address))
      services.append((size, bus, server, center))
    }
    var p50: [Int: [Double]] = [:]
    for _ in 0..<3 {
      for service in services {
        var samples: [Double] = []
        samples.reserveCapacity(calls)
        for _ in 0..<calls {
          let before = MonotonicClock.now
          guard try await service.center.state(of: "bench.state") == 42 else {
            throw DBusError(.failed, "notifyd with \(service.size) names answered a wrong state")
          }
          samples.append(Double(MonotonicClock.now - before) / 1000)
        }
        p50[service.size, default: []].append(
          Percentiles(Array(samples.dropFirst(calls / 10)))[0.5])
      }
    }
    for service in services {
      await service.center.close()
      await service.server.stop()
    }
    let fewest = median(p50[10] ?? [])
    return heldSizes.dropFirst().map { size in
      BenchmarkRow(
        name: "GetState p50, \(size) names held", unit: "µs", subject: median(p50[size] ?? []),
        baselineName: "same, 10 names", baseline: fewest, higherIsBetter: false,
        target: size == heldSizes.last ? 1.2 : nil)
    }
  }

  // MARK: - Memory

  /// The resident memory a process gains per registration of a distinct name, measured in a
  /// child process that holds them (`Children.notifyHold`), against a 512 B budget.
  ///
  /// Two rows without a target split the figure: registrations all of one name (what the
  /// registry holds per registration), and the `DBus` subscriptions a center makes for
  /// distinct names, alone (what each name costs below the Notify layer).
  private static func memoryRows(_ bus: PrivateBus, largest: Int) throws -> [BenchmarkRow] {
    let small = largest / 10
    return [
      try memoryRow(bus, small, name: "memory per registration, \(small) names", target: 1),
      try memoryRow(bus, largest, name: "memory per registration, \(largest) names", target: 1),
      try memoryRow(
        bus, small, mode: "same", name: "memory per registration, \(small) of one name"),
      try memoryRow(
        bus, small, mode: "bus", name: "memory per D-Bus subscription alone, \(small) names"),
    ]
  }

  private static func memoryRow(
    _ bus: PrivateBus, _ count: Int, mode: String? = nil, name: String, target: Double? = nil
  ) throws -> BenchmarkRow {
    let holder = try Subprocess.spawn(
      CommandLine.arguments[0],
      arguments: ["--child", "notify-hold", bus.address.rawValue, String(count)]
        + (mode.map { [$0] } ?? []))
    defer {
      holder.kill()
      holder.wait()
    }
    guard let ready = holder.readLine(milliseconds: 300_000), ready.hasPrefix("ready "),
      let bytes = Double(ready.dropFirst(6))
    else { throw DBusError(.failed, "the process holding \(count) registrations did not start") }
    return BenchmarkRow(
      name: name, unit: "bytes", subject: bytes / Double(count), baselineName: "512 B budget",
      baseline: 512, higherIsBetter: false, target: target)
  }
}
