import BusTestSupport
import CBaseline
import CNotifyBench
import DBus
import Synchronization

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

/// The C library (`notify.h`) against the same C measurements on libdbus (CBaseline).
///
/// It measures post → handler latency against libdbus with its handler on a dispatch
/// queue (the same delivery contract as `notify_register_dispatch`; libdbus's receiving
/// thread, without that hop, is the second peer), post → descriptor latency, and posts per
/// second, and runs libnotify.md's 100,000 parallel {register_check, cancel,
/// register_dispatch, cancel, post} rounds on a plain and a `self.` name and reports any
/// call that failed.
///
/// The C code calls the library's functions linked into this executable: the same code as
/// libnotifybus.so.1, without the dynamic loader's symbol lookup.
enum CLibrarySuite: BenchmarkSuite {
  static let name = "capi"

  /// One bus for the whole process, stopped by ``finish()`` when the benchmark ends.
  ///
  /// The C library connects once, on its first call, to the bus `NOTIFYBUS_BUS_ADDRESS`
  /// names then, so every run of this suite (`--repeat`) must find that bus still there.
  private static let sharedBus = Mutex<PrivateBus?>(nil)

  static func finish() { sharedBus.withLock { $0 = nil } }

  /// Runs the measurements on a thread of their own, as a C program runs its code on its
  /// own threads, not on the Swift concurrency pool, whose few threads the library's own
  /// tasks use (measured twice each on a loaded machine, posts/s 1→1 was 0.74x and 0.68x
  /// on a pool thread, 0.87x and 0.87x on a thread of its own; latency moved within the
  /// noise).
  static func run(scale: Double) async throws -> [BenchmarkRow] {
    try await withCheckedThrowingContinuation { continuation in
      let job = Unmanaged.passRetained(
        Job { continuation.resume(with: Result { try measure(scale: scale) }) })
      var thread = pthread_t()
      let started = pthread_create(
        &thread, nil,
        { context in
          Unmanaged<Job>.fromOpaque(context!).takeRetainedValue().run()
          return nil
        }, job.toOpaque())
      if started == 0 { pthread_detach(thread) } else { job.takeRetainedValue().run() }
    }
  }

  /// Work handed to a new thread.
  private final class Job: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
  }

  private static func measure(scale: Double) throws -> [BenchmarkRow] {
    let bus = try sharedBus.withLock { shared in
      if let shared { return shared }
      let bus = try PrivateBus(outgoingLimit: benchmarkOutgoingLimit)
      shared = bus
      return bus
    }
    // The library reads the variable on its first call only. The suites after this one
    // must not see it: their buses start programs (readlater) with this process's
    // environment, which would send them to this suite's bus.
    let previous = getenv("NOTIFYBUS_BUS_ADDRESS").map { String(cString: $0) }
    cnotify_use_bus(bus.address.rawValue)
    defer {
      if let previous {
        setenv("NOTIFYBUS_BUS_ADDRESS", previous, 1)
      } else {
        unsetenv("NOTIFYBUS_BUS_ADDRESS")
      }
    }
    let latencyCount = max(200, Int(2000 * scale))
    let throughputCount = max(2000, Int(40_000 * scale))
    var ours: [Double] = []
    var theirs: [Double] = []
    var dispatchBaseline: [Double] = []
    var descriptor: [Double] = []
    var rates: [Double] = []
    var cRates: [Double] = []
    for round in 0..<3 {
      var samples = [Double](repeating: 0, count: latencyCount)
      guard cnotify_latency("bench.capi.latency", CInt(latencyCount), &samples) == 0 else {
        throw DBusError(.failed, "the C library latency run \(round) failed")
      }
      ours += samples.dropFirst(latencyCount / 10)
      guard cbaseline_latency(bus.address.rawValue, CInt(latencyCount), &samples) == 0 else {
        throw DBusError(.failed, "the C libdbus latency run \(round) failed")
      }
      theirs += samples.dropFirst(latencyCount / 10)
      guard cbaseline_dispatch_latency(bus.address.rawValue, CInt(latencyCount), &samples) == 0
      else { throw DBusError(.failed, "the C libdbus dispatch latency run \(round) failed") }
      dispatchBaseline += samples.dropFirst(latencyCount / 10)
      guard cnotify_fd_latency("bench.capi.descriptor", CInt(latencyCount), &samples) == 0 else {
        throw DBusError(.failed, "the C library descriptor latency run \(round) failed")
      }
      descriptor += samples.dropFirst(latencyCount / 10)
      let rate = cnotify_throughput("bench.capi.throughput", CInt(throughputCount))
      let cRate = cbaseline_throughput(bus.address.rawValue, CInt(throughputCount))
      guard rate > 0, cRate > 0 else {
        throw DBusError(.failed, "a throughput run failed (library \(rate), libdbus \(cRate))")
      }
      rates.append(rate)
      cRates.append(cRate)
    }
    let latency = Percentiles(ours)
    let cLatency = Percentiles(theirs)
    let rounds = max(10_000, Int(100_000 * scale))
    for name in ["com.example.test", "self.example.test"] {
      var seconds = 0.0
      let failures = cnotify_parallel_rounds(name, CInt(rounds), &seconds)
      fputs(
        "capi: \(rounds) parallel rounds on \(name) in \(Report.format(seconds)) s, "
          + "\(failures) calls not OK\n", stderr)
      if failures != 0 {
        throw DBusError(.failed, "\(failures) calls of the parallel rounds on \(name) failed")
      }
    }
    let dispatchLatency = Percentiles(dispatchBaseline)
    // The same contract on both sides: the clock runs from before the post until the
    // handler runs on a dispatch queue, the hop to which (a thread wakeup) libdbus's own
    // receiving thread does not make; the second peer is that receiving thread.
    return [
      BenchmarkRow(
        name: "C API post→handler latency p50", unit: "µs", subject: latency[0.5],
        baselineName: "C libdbus + dispatch handler", baseline: dispatchLatency[0.5],
        higherIsBetter: false, target: 1.2, secondBaselineName: "C libdbus signal, no hop",
        secondBaseline: cLatency[0.5]),
      BenchmarkRow(
        name: "C API post→handler latency p99", unit: "µs", subject: latency[0.99],
        baselineName: "C libdbus + dispatch handler", baseline: dispatchLatency[0.99],
        higherIsBetter: false, target: nil, secondBaselineName: "C libdbus signal, no hop",
        secondBaseline: cLatency[0.99]),
      BenchmarkRow(
        name: "C API post→descriptor latency p50", unit: "µs",
        subject: Percentiles(descriptor)[0.5],
        baselineName: "C libdbus signal", baseline: cLatency[0.5], higherIsBetter: false,
        target: nil),
      BenchmarkRow(
        name: "C API posts/s 1→1", unit: "posts/s", subject: median(rates),
        baselineName: "C libdbus", baseline: median(cRates), higherIsBetter: true,
        target: 1 / 1.2),
    ]
  }
}
