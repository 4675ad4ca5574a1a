import BusTestSupport
import CBaseline
import DBus
import Dispatch
import Notify
import Synchronization
import SystemSupport

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

/// The roles `notifybus-bench --child ROLE ...` plays in benchmarks that need other processes.
///
/// Each prints `ready` once set up, then `done <ns>` or `failed <why>`.
enum Children {
  static func run(_ arguments: [String]) async -> Int32 {
    do {
      switch arguments.first {
      case "notify-receive" where arguments.count == 4 || arguments.count == 5:
        try await notifyReceive(
          address: arguments[1], name: arguments[2], count: UInt64(arguments[3]) ?? 0,
          onQueue: arguments.count == 5 && arguments[4] == "queue")
      case "c-receive" where arguments.count == 4:
        print("ready")  // printed again by C once its rule is in place
        let last = cbaseline_receive(arguments[1], arguments[2], CInt(arguments[3]) ?? 0)
        print(last > 0 ? "done \(last)" : "failed")
      case "notify-hold" where arguments.count == 3 || arguments.count == 4:
        try await notifyHold(
          address: arguments[1], count: Int(arguments[2]) ?? 0,
          sameName: arguments.count == 4 && arguments[3] == "same",
          busOnly: arguments.count == 4 && arguments[3] == "bus")
      case "post-latency" where arguments.count == 4:
        try await NotifySuite.child(arguments)
      case "getstate-serve" where arguments.count == 3,
        "getstate-call" where arguments.count == 5:
        try await NotifydSuite.child(arguments)
      case "hold-bus" where arguments.count == 1:
        try holdBus()
      default:
        print("failed unknown child role \(arguments)")
        return 64
      }
      return 0
    } catch {
      print("failed \(error)")
      return 1
    }
  }

  /// Starts a private bus, as every suite does, prints `ready <daemon's pid>` and holds it
  /// until a signal stops the benchmark, for a minute at most: for the test that an
  /// interrupted benchmark ends its children (`KillUnreapedTests`).
  ///
  /// It waits for no input: a child's standard input is `/dev/null`, which ended the hold
  /// at once, and the test then passed only when its signal came before the exit.
  static func holdBus() throws {
    let bus = try PrivateBus()
    print("ready \(bus.pid ?? 0)")
    fflush(stdout)
    withExtendedLifetime(bus) {
      let deadline = MonotonicClock.now + 60_000_000_000
      while MonotonicClock.now < deadline { usleep(100_000) }
    }
  }

  /// Registers for `name` and reports when `count` posts have arrived; the handler runs
  /// on a dispatch queue (`onQueue`) or on the connection's thread, as C's receiver counts
  /// on its receiving thread.
  static func notifyReceive(address: String, name: String, count: UInt64, onQueue: Bool)
    async throws
  {
    let center = try await NotifyCenter.connect(to: .address(BusAddress(address)))
    let done = DispatchSemaphore(value: 0)
    let finished = Atomic<Int>(0)
    let tokenBox = Mutex<NotifyToken?>(nil)
    let queue = onQueue ? DispatchQueue(label: "r") : nil
    let token = try await center.register(NotifyName(name), queue: queue) {
      token in
      if (try? center.postCount(token)) ?? 0 >= count,
        finished.compareExchange(expected: 0, desired: MonotonicClock.now, ordering: .relaxed)
          .exchanged
      {
        done.signal()
      }
    }
    tokenBox.withLock { $0 = token }
    print("ready")
    fflush(stdout)
    let waited = await Task.detached { done.wait(timeout: .now() + 60) }.value
    print(waited == .success ? "done \(finished.load(ordering: .relaxed))" : "failed timeout")
  }

  /// Holds `count` registrations of distinct names (or of one, `sameName`) and reports the
  /// memory they take; `busOnly` holds only what a center keeps on its connection for them
  /// (an entry each in one rule set).
  ///
  /// A connection holds at most 50,000 match rules (the bus's
  /// `max_match_rules_per_connection`), so distinct names go on one center per 40,000.
  static func notifyHold(address: String, count: Int, sameName: Bool, busOnly: Bool = false)
    async throws
  {
    var centers: [NotifyCenter] = []
    for _ in 0..<(sameName ? 1 : max(1, (count + 39_999) / 40_000)) {
      let center = try await NotifyCenter.connect(to: .address(BusAddress(address)))
      _ = try await center.registerCheck("bench.hold.warmup")
      centers.append(center)
    }
    let spread = centers
    // What a center holds on its connection for its names: one rule set, an entry per name.
    let ruleSets = centers.map {
      $0.connection.ruleSet(
        .signal(member: NotifyWire.member, path: NotifyWire.path),
        interfacePrefix: NotifyWire.interfacePrefix
      ) { _ in }
    }
    // Count what the registrations hold, not what malloc keeps of freed set-up garbage.
    _ = mallocTrim(0)
    let before = residentBytes()
    try await withThrowingTaskGroup(of: Void.self) { group in
      for worker in 0..<16 {
        group.addTask {
          for index in stride(from: worker, to: count, by: 16) {
            let name = try NotifyName(sameName ? "bench.idle.shared" : "bench.idle.name\(index)")
            let center = spread[index % spread.count]
            if busOnly {
              try await ruleSets[index % spread.count].add(NotifyWire.interface(for: name))
            } else {
              _ = try await center.registerCheck(name)
            }
          }
        }
      }
      try await group.waitForAll()
    }
    _ = mallocTrim(0)
    let after = residentBytes()
    print("ready \(after - before)")
    fflush(stdout)
    // The center is not used again; an optimized build would release it (closing the
    // connection, so the bus would hold none of the registrations) without this.
    withExtendedLifetime(centers) {
      while true { pause() }
    }
  }

  /// glibc's `malloc_trim`, which `Glibc` does not import: returns freed heap to the
  /// system.
  @_silgen_name("malloc_trim")
  static func mallocTrim(_ pad: Int) -> CInt

  /// A process's resident set size (this one's by default), from `/proc/PID/status`.
  static func residentBytes(of pid: pid_t? = nil) -> Int {
    guard let file = fopen("/proc/\(pid.map(String.init) ?? "self")/status", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, 256, file) != nil {
      let bytes = line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
      let text = String(decoding: bytes, as: UTF8.self)
      if text.hasPrefix("VmRSS:") {
        let digits = text.filter(\.isNumber)
        return (Int(digits) ?? 0) * 1024
      }
    }
    return 0
  }
}
