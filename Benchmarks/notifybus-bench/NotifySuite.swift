import BusTestSupport
import CBaseline
import CSDBusBaseline
import DBus
import Dispatch
import Notify
import Synchronization
import SystemSupport

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

/// The `Notify` layer against C libdbus, in and across processes, with and without
/// 10,000 idle registrations on the bus; `notify-post` against `dbus-send`; and the
/// memory of 10,000 registrations.
enum NotifySuite: BenchmarkSuite {
  static let name = "notify"
  static let postedName: NotifyName = "bench.notify.saved"

  static func run(scale: Double) async throws -> [BenchmarkRow] {
    let bus = try PrivateBus(outgoingLimit: benchmarkOutgoingLimit)
    let latencyCount = max(200, Int(2000 * scale))
    let throughputCount = max(2000, Int(40_000 * scale))
    var rows: [BenchmarkRow] = []

    let quiet = try await measure(bus, latencyCount: latencyCount, throughputCount: throughputCount)
    // Each delivery contract against the C program with the same one: a handler on the
    // thread that read the signal (`register(_:handler:)`, C's handler on its receiving
    // thread), and a handler on a dispatch queue (`register(_:queue:handler:)`, C handing
    // each signal to a dispatch queue).
    rows += [
      BenchmarkRow(
        name: "post→handler latency p50", unit: "µs", subject: quiet.latency[0.5],
        baselineName: "C libdbus signal", baseline: quiet.cLatency[0.5], higherIsBetter: false,
        target: 1.15, secondBaselineName: "C sd-bus signal", secondBaseline: quiet.sdLatency[0.5]),
      BenchmarkRow(
        name: "post→handler latency p99", unit: "µs", subject: quiet.latency[0.99],
        baselineName: "C libdbus signal", baseline: quiet.cLatency[0.99], higherIsBetter: false,
        target: 1.3, secondBaselineName: "C sd-bus signal", secondBaseline: quiet.sdLatency[0.99]),
      BenchmarkRow(
        name: "post→queue handler latency p50", unit: "µs", subject: quiet.queueLatency[0.5],
        baselineName: "C libdbus + dispatch handler", baseline: quiet.cQueueLatency[0.5],
        higherIsBetter: false, target: 1.15),
      BenchmarkRow(
        name: "post→queue handler latency p99", unit: "µs", subject: quiet.queueLatency[0.99],
        baselineName: "C libdbus + dispatch handler", baseline: quiet.cQueueLatency[0.99],
        higherIsBetter: false, target: 1.3),
      BenchmarkRow(
        name: "posts/s 1→1 process", unit: "posts/s", subject: quiet.oneToOne,
        baselineName: "C libdbus", baseline: quiet.cOneToOne, higherIsBetter: true, target: 0.9),
    ]
    let fanOut = try await throughput(bus, receivers: 8, count: throughputCount / 4)
    let queueFanOut = try await throughput(
      bus, receivers: 8, count: throughputCount / 4, onQueue: true)
    rows += [
      BenchmarkRow(
        name: "posts/s 1→8 processes", unit: "posts/s", subject: fanOut.notify,
        baselineName: "C libdbus", baseline: fanOut.c, higherIsBetter: true, target: 0.9),
      BenchmarkRow(
        name: "posts/s 1→8 processes, queue handlers", unit: "posts/s",
        subject: queueFanOut.notify, baselineName: "C libdbus", baseline: queueFanOut.c,
        higherIsBetter: true, target: nil),
    ]

    // 10,000 idle registrations held by another process.
    let holdCount = max(1000, Int(10_000 * scale))
    let holder = try Subprocess.spawn(
      CommandLine.arguments[0],
      arguments: ["--child", "notify-hold", bus.address.rawValue, String(holdCount)])
    defer {
      holder.kill()
      holder.wait()
    }
    guard let ready = holder.readLine(milliseconds: 120_000), ready.hasPrefix("ready "),
      let bytes = Double(ready.dropFirst(6))
    else { throw DBusError(.failed, "the holding process did not start") }
    let busy = try await measure(bus, latencyCount: latencyCount, throughputCount: throughputCount)
    rows += [
      BenchmarkRow(
        name: "latency p50, \(holdCount) idle registrations", unit: "µs",
        subject: busy.latency[0.5], baselineName: "same, none idle", baseline: quiet.latency[0.5],
        higherIsBetter: false, target: 1.2),
      BenchmarkRow(
        name: "posts/s 1→1, \(holdCount) idle registrations", unit: "posts/s",
        subject: busy.oneToOne, baselineName: "same, none idle", baseline: quiet.oneToOne,
        higherIsBetter: true, target: 1 / 1.2),
      BenchmarkRow(
        name: "memory per registration", unit: "bytes", subject: bytes / Double(holdCount),
        baselineName: "1 KiB budget", baseline: 1024, higherIsBetter: false, target: 1),
    ]
    if let cli = try cliCost(bus, runs: max(10, Int(60 * scale))) { rows.append(cli) }
    return rows
  }

  struct Figures {
    var latency: Percentiles
    var cLatency: Percentiles
    var queueLatency: Percentiles
    var cQueueLatency: Percentiles
    /// The same one-way signal latency on sd-bus, the second peer.
    var sdLatency: Percentiles
    var oneToOne: Double
    var cOneToOne: Double
  }

  static func measure(_ bus: PrivateBus, latencyCount: Int, throughputCount: Int) async throws
    -> Figures
  {
    var latencies: [Double] = []
    var cLatencies: [Double] = []
    var queueLatencies: [Double] = []
    var cQueueLatencies: [Double] = []
    var sdLatencies: [Double] = []
    var rates: [Double] = []
    var cRates: [Double] = []
    for _ in 0..<3 {
      latencies += try await latency(bus.address, count: latencyCount, onQueue: false)
      var samples = [Double](repeating: 0, count: latencyCount)
      guard cbaseline_latency(bus.address.rawValue, CInt(latencyCount), &samples) == 0 else {
        throw DBusError(.failed, "the C latency baseline failed")
      }
      cLatencies += samples.dropFirst(latencyCount / 10)
      queueLatencies += try await latency(bus.address, count: latencyCount, onQueue: true)
      guard cbaseline_dispatch_latency(bus.address.rawValue, CInt(latencyCount), &samples) == 0
      else { throw DBusError(.failed, "the C dispatch latency baseline failed") }
      cQueueLatencies += samples.dropFirst(latencyCount / 10)
      guard csdbus_latency(bus.address.rawValue, CInt(latencyCount), &samples) == 0 else {
        throw DBusError(.failed, "the C sd-bus latency baseline failed")
      }
      sdLatencies += samples.dropFirst(latencyCount / 10)
      let rate = try await throughput(bus, receivers: 1, count: throughputCount)
      rates.append(rate.notify)
      cRates.append(rate.c)
    }
    return Figures(
      latency: Percentiles(latencies), cLatency: Percentiles(cLatencies),
      queueLatency: Percentiles(queueLatencies), cQueueLatency: Percentiles(cQueueLatencies),
      sdLatency: Percentiles(sdLatencies), oneToOne: median(rates), cOneToOne: median(cRates))
  }

  /// Post → handler, one at a time, in one process over two connections; the handler runs
  /// on a dispatch queue (`onQueue`) or on the receiving connection's thread.
  static func latency(_ address: BusAddress, count: Int, onQueue: Bool) async throws -> [Double] {
    let poster = try await NotifyCenter.connect(to: .address(address))
    let receiver = try await NotifyCenter.connect(to: .address(address))
    let samples = try await latency(
      from: poster, to: receiver, name: postedName, count: count, timeout: 5,
      queue: onQueue ? DispatchQueue(label: "lat") : nil)
    await poster.close()
    await receiver.close()
    return samples
  }

  /// Post by `poster` → handler of `receiver` (on `queue`, or on the connection's thread
  /// when `nil`), one at a time; microseconds, the first tenth dropped as warm-up.
  static func latency(
    from poster: NotifyCenter, to receiver: NotifyCenter, name: NotifyName, count: Int,
    timeout: Int, queue: DispatchQueue? = DispatchQueue(label: "lat")
  ) async throws -> [Double] {
    let postedAt = Atomic<Int>(0)
    let samples = Mutex<[Double]>([])
    let arrived = DispatchSemaphore(value: 0)
    let handler: @Sendable (NotifyToken) -> Void = { _ in
      let now = MonotonicClock.now
      samples.withLock { $0.append(Double(now - postedAt.load(ordering: .relaxed)) / 1000) }
      arrived.signal()
    }
    let token = try await receiver.register(name, queue: queue, handler: handler)
    try await Task.detached {
      for index in 0..<count {
        postedAt.store(MonotonicClock.now, ordering: .relaxed)
        try poster.post(name)
        guard arrived.wait(timeout: .now() + .seconds(timeout)) == .success else {
          throw DBusError(.timeout, "post \(index) was not delivered")
        }
      }
    }.value
    try receiver.cancel(token)
    return samples.withLock { Array($0.dropFirst(count / 10)) }
  }

  /// Posts per second from this process to `receivers` processes, NotifyBus and C; the
  /// NotifyBus receivers count in a handler on a dispatch queue (`onQueue`) or on the
  /// connection's thread, where C's receivers count.
  static func throughput(_ bus: PrivateBus, receivers: Int, count: Int, onQueue: Bool = false)
    async throws -> (notify: Double, c: Double)
  {
    let address = bus.address.rawValue
    let interface = NotifyWire.interface(for: postedName).rawValue

    let notifyChildren = try (0..<receivers).map { _ in
      try Subprocess.spawn(
        CommandLine.arguments[0],
        arguments: ["--child", "notify-receive", address, postedName.rawValue, String(count)]
          + (onQueue ? ["queue"] : []))
    }
    let poster = try await NotifyCenter.connect(to: .address(bus.address))
    try awaitReady(notifyChildren)
    let start = MonotonicClock.now
    for _ in 0..<count { try poster.post(postedName) }
    let notifyEnd = try awaitDone(notifyChildren)
    await poster.close()

    let cChildren = try (0..<receivers).map { _ in
      try Subprocess.spawn(
        CommandLine.arguments[0],
        arguments: ["--child", "c-receive", address, interface, String(count)])
    }
    try awaitReady(cChildren, lines: 2)
    let cStart = MonotonicClock.now
    guard cbaseline_send(address, interface, CInt(count)) == 0 else {
      throw DBusError(.failed, "the C sender failed")
    }
    let cEnd = try awaitDone(cChildren)
    return (
      Double(count) / (Double(notifyEnd - start) / 1e9),
      Double(count) / (Double(cEnd - cStart) / 1e9)
    )
  }

  private static func awaitReady(_ children: [Subprocess], lines: Int = 1) throws {
    for child in children {
      for _ in 0..<lines {
        guard child.readLine(milliseconds: 30_000) == "ready" else {
          throw DBusError(.failed, "a receiver did not start")
        }
      }
    }
  }

  private static func awaitDone(_ children: [Subprocess]) throws -> Int {
    var last = 0
    for child in children {
      let line = child.readLine(milliseconds: 90_000) ?? "failed no answer"
      child.wait()
      guard line.hasPrefix("done "), let time = Int(line.dropFirst(5)) else {
        throw DBusError(.failed, "a receiver reported '\(line)'")
      }
      last = max(last, time)
    }
    return last
  }

  /// The latency rows' loop alone, for `Benchmarks/profile-notify`.
  ///
  /// `--child post-latency ADDRESS swift|queue|c|sd N`: NotifyBus with the handler on the
  /// connection's thread or on a queue, C libdbus or C sd-bus, N posts one at a time,
  /// started by a line on standard input once `ready` is printed so that a profiler can
  /// attach first, and kept until standard input closes, so that it can detach before the
  /// teardown. Prints `done <ns> <p50 µs>`
  /// and the run's wakeups, involuntary switches and user and system CPU µs (`getrusage`:
  /// every thread's, those that ended included).
  static func child(_ arguments: [String]) async throws {
    let address = try BusAddress(arguments[1])
    let count = Int(arguments[3]) ?? 0
    print("ready")
    fflush(stdout)
    _ = readLine()
    let start = MonotonicClock.now
    let before = ResourceUsage()
    var samples = [Double](repeating: 0, count: count)
    switch arguments[2] {
    case "swift", "queue":
      samples = try await latency(address, count: count, onQueue: arguments[2] == "queue")
    case "c":
      guard cbaseline_latency(address.rawValue, CInt(count), &samples) == 0 else {
        throw DBusError(.failed, "the C latency baseline failed")
      }
    case "sd":
      guard csdbus_latency(address.rawValue, CInt(count), &samples) == 0 else {
        throw DBusError(.failed, "the C sd-bus latency baseline failed")
      }
    default:
      throw DBusError(.invalidArgs, "post-latency runs swift, queue, c or sd")
    }
    let elapsed = MonotonicClock.now - start
    let used = ResourceUsage() - before
    print(
      "done \(elapsed) \(Percentiles(samples)[0.5]) \(used.wakeups) \(used.preemptions) "
        + "\(used.userMicroseconds) \(used.systemMicroseconds)")
    fflush(stdout)
    while readLine() != nil {}
  }

  /// The process's context switches and CPU time so far, every thread's.
  struct ResourceUsage {
    var wakeups = 0
    var preemptions = 0
    var userMicroseconds = 0
    var systemMicroseconds = 0

    init() {
      var usage = rusage()
      getrusage(RUSAGE_SELF.rawValue, &usage)
      wakeups = usage.ru_nvcsw
      preemptions = usage.ru_nivcsw
      userMicroseconds = usage.ru_utime.tv_sec * 1_000_000 + usage.ru_utime.tv_usec
      systemMicroseconds = usage.ru_stime.tv_sec * 1_000_000 + usage.ru_stime.tv_usec
    }

    static func - (a: Self, b: Self) -> Self {
      var difference = a
      difference.wakeups -= b.wakeups
      difference.preemptions -= b.preemptions
      difference.userMicroseconds -= b.userMicroseconds
      difference.systemMicroseconds -= b.systemMicroseconds
      return difference
    }
  }

  /// Wall time of `notify-post NAME` against `dbus-send` posting the same signal.
  static func cliCost(_ bus: PrivateBus, runs: Int) throws -> BenchmarkRow? {
    let notifyPost = Products.path("notify-post")
    guard access(notifyPost, X_OK) == 0 else {
      fputs("notify: skipping notify-post timing: build it too (swift build -c release)\n", stderr)
      return nil
    }
    let address = bus.address.rawValue
    let interface = NotifyWire.interface(for: postedName).rawValue
    var ours: [Double] = []
    var theirs: [Double] = []
    for _ in 0..<runs {
      ours.append(try time(notifyPost, ["--bus", address, postedName.rawValue]))
      theirs.append(
        try time(
          "dbus-send",
          [
            "--bus=" + address, "--type=signal", "/org/notifybus/Notify1", interface + ".Posted",
            "string:" + postedName.rawValue,
          ]))
    }
    return BenchmarkRow(
      name: "notify-post wall time", unit: "ms", subject: median(ours), baselineName: "dbus-send",
      baseline: median(theirs), higherIsBetter: false, target: 1.3)
  }

  private static func time(_ command: String, _ arguments: [String]) throws -> Double {
    let start = MonotonicClock.now
    let process = try Subprocess.spawn(command, arguments: arguments, captureOutput: false)
    guard process.wait() == .exited(0) else {
      throw DBusError(.failed, "\(command) failed")
    }
    return Double(MonotonicClock.now - start) / 1e6
  }
}
