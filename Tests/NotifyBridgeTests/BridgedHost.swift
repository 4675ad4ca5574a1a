import BusTestSupport
import DBus
import Notify
import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#endif

/// One "host" of a bridge test: a private bus, a notifyd on it bridging to one or more
/// brokers, and a connection of the test's own that posts and records every `Posted`
/// signal on the bus.
final class BridgedHost {
  let bus: PrivateBus
  private(set) var process: Subprocess
  let logPath: String
  private let arguments: [String]
  let connection: BusConnection
  private let seen = PostRecorder()
  private let subscription: SignalSubscription

  /// Starts `notifyd --no-persist --bus <bus> <arguments>` and waits for its name, and
  /// (unless told not to) for every bridge to be connected.
  init(_ arguments: [String], waitForBridges: Bool = true) async throws {
    bus = try PrivateBus()
    logPath = bus.directory + "/notifyd.log"
    self.arguments = ["--bus", bus.address.rawValue, "--no-persist"] + arguments
    process = try Self.spawn(self.arguments, bus: bus, log: logPath)
    connection = try await BusConnection.connect(to: .address(bus.address))
    let record = seen
    subscription = try await connection.subscribe(
      .signal(member: NotifyWire.member, path: NotifyWire.path)
    ) { message in
      if let name = NotifyWire.postedName(in: message) {
        record.names.withLock { $0.append(name.rawValue) }
      }
    }
    try await waitForName()
    if waitForBridges { try await waitUntilConnected() }
  }

  deinit {
    process.kill(SIGKILL)
    process.wait()
  }

  private static func spawn(_ arguments: [String], bus: PrivateBus, log: String) throws
    -> Subprocess
  {
    var environment = Products.currentEnvironment()
    environment["HOME"] = bus.directory
    environment["XDG_STATE_HOME"] = nil
    return try Subprocess.spawn(
      Products.path("notifyd"), arguments: arguments, environment: environment,
      captureOutput: false, errorFile: log)
  }

  /// Stops notifyd with SIGTERM and waits for it to be gone.
  func stop() async throws {
    process.kill(SIGTERM)
    _ = process.wait(milliseconds: 10_000)
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline,
      (try? await connection.owner(of: "org.notifybus.Notify1")) != nil
    {
      try await Task.sleep(for: .milliseconds(20))
    }
  }

  /// Starts notifyd again with the same arguments and waits for its bridges.
  func start() async throws {
    process = try Self.spawn(arguments, bus: bus, log: logPath)
    try await waitForName()
    try await waitUntilConnected()
  }

  private func waitForName() async throws {
    let deadline = ContinuousClock.now + .seconds(20)
    while ContinuousClock.now < deadline {
      if (try? await connection.owner(of: "org.notifybus.Notify1")) != nil { return }
      if process.wait(milliseconds: 0) != nil {
        throw DBusError(.failed, "notifyd exited: \(log)")
      }
      try await Task.sleep(for: .milliseconds(20))
    }
    throw DBusError(.timeout, "notifyd did not take its name: \(log)")
  }

  /// Waits until every bridge reports `Connected`.
  func waitUntilConnected(_ connected: Bool = true) async throws {
    let deadline = ContinuousClock.now + .seconds(30)
    while ContinuousClock.now < deadline {
      let rows = try await bridges()
      if !rows.isEmpty && rows.allSatisfy({ $0["Connected"]?.boolValue == connected }) { return }
      try await Task.sleep(for: .milliseconds(30))
    }
    throw DBusError(
      .timeout, "the bridge did not become \(connected ? "" : "dis")connected: \(log)")
  }

  /// Posts `name` from the test's connection (a plain post) and waits until the bus
  /// has routed it.
  func post(_ name: NotifyName) async throws {
    let (sequence, nameSequence) = seen.sent.withLock { sent in
      sent.all += 1
      sent.byName[name.rawValue, default: 0] += 1
      return (sent.all, sent.byName[name.rawValue]!)
    }
    try connection.send(
      NotifyWire.signal(for: name, sequence: sequence, nameSequence: nameSequence))
    try await connection.flush()
  }

  /// The names of the `Posted` signals seen so far, in order.
  var posted: [String] { seen.names.withLock { $0 } }

  /// How often `name` was seen posted.
  func count(_ name: String) -> Int { posted.count { $0 == name } }

  /// Waits until each of `names` has been seen at least once (20 s at most).
  func waitForPosts(_ names: [String]) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(20)
    while ContinuousClock.now < deadline {
      let seen = Set(posted)
      if names.allSatisfy(seen.contains) { return true }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return false
  }

  func call(_ member: MemberName, _ body: [DBusValue] = []) async throws -> [DBusValue] {
    try await connection.call(
      .methodCall(
        destination: "org.notifybus.Notify1", path: "/org/notifybus/Notify1",
        interface: "org.notifybus.Notify1", member: member, body: body)
    ).body
  }

  func setState(_ name: String, _ value: UInt64) async throws {
    _ = try await call("SetState", [.string(name), .uint64(value)])
  }

  func state(_ name: String) async throws -> UInt64 {
    try await call("GetState", [.string(name)]).first?.uint64Value ?? 0
  }

  /// Waits until `name`'s state is `value` (20 s at most); returns the last value read.
  func waitForState(_ name: String, _ value: UInt64) async throws -> UInt64 {
    let deadline = ContinuousClock.now + .seconds(20)
    var last: UInt64 = 0
    while ContinuousClock.now < deadline {
      last = try await state(name)
      if last == value { return last }
      try await Task.sleep(for: .milliseconds(20))
    }
    return last
  }

  /// `GetStatistics`, unwrapped.
  func statistics() async throws -> [String: DBusValue] {
    guard let value = try await call("GetStatistics").first else { return [:] }
    return Self.unwrap(value)
  }

  /// `GetStatistics`' `Bridges` rows.
  func bridges() async throws -> [[String: DBusValue]] {
    guard case .array(_, let rows)? = try await statistics()["Bridges"] else { return [] }
    return rows.map(Self.unwrap)
  }

  /// A counter of the first bridge.
  func counter(_ key: String) async throws -> UInt64 {
    let row = try await bridges().first ?? [:]
    if case .uint32(let value)? = row[key] { return UInt64(value) }
    return row[key]?.uint64Value ?? 0
  }

  /// Waits until a counter of the first bridge reaches `value` (20 s at most).
  func waitForCounter(_ key: String, atLeast value: UInt64) async throws -> UInt64 {
    let deadline = ContinuousClock.now + .seconds(20)
    var last: UInt64 = 0
    while ContinuousClock.now < deadline {
      last = try await counter(key)
      if last >= value { return last }
      try await Task.sleep(for: .milliseconds(30))
    }
    return last
  }

  static func unwrap(_ value: DBusValue) -> [String: DBusValue] {
    guard case .dictionary(_, _, let entries) = value else { return [:] }
    var result: [String: DBusValue] = [:]
    for entry in entries {
      guard case .string(let key) = entry.key else { continue }
      if case .variant(let inner) = entry.value {
        result[key] = inner
      } else {
        result[key] = entry.value
      }
    }
    return result
  }

  /// What notifyd wrote to standard error.
  var log: String { (try? Products.runCommand("cat", [logPath]).output) ?? "" }

  /// Where the host's dbus-daemon writes its standard error.
  var busLogPath: String { bus.directory + "/bus.log" }

  /// Whether notifyd is still running.
  var isRunning: Bool { process.wait(milliseconds: 0) == nil }
}

/// The names of the `Posted` signals a connection saw.
final class PostRecorder: Sendable {
  let names = Mutex<[String]>([])
  /// What this connection posted: its counters, as `Protocol/notify.md` defines them.
  let sent = Mutex(SentCounts())

  struct SentCounts {
    var all: UInt64 = 0
    var byName: [String: UInt64] = [:]
  }
}
