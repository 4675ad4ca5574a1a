import BusTestSupport
import DBus
import Glibc
import Notify
import SystemSupport
import Testing

/// A receiver that stops reading (here `notify-watch` under `SIGSTOP`) while posts flood
/// the bus (issue 11, item 13).
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
struct StuckReceiverTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  /// The bus's statistics for the connection of process `pid`, once it has a match rule.
  func statistics(ofProcess pid: pid_t, via connection: BusConnection) async throws
    -> [String: DBusValue]
  {
    func busCall(_ member: MemberName, _ body: [DBusValue] = []) -> Message {
      .methodCall(
        destination: .bus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
        member: member, body: body)
    }
    let deadline = ContinuousClock.now + .seconds(10)
    while ContinuousClock.now < deadline {
      let reply = try await connection.call(busCall("ListNames"))
      guard case .array(_, let names)? = reply.body.first else { break }
      for case .string(let name) in names where name.hasPrefix(":") {
        let owner = try? await connection.call(
          busCall("GetConnectionUnixProcessID", [.string(name)]))
        guard owner?.body.first?.uint64Value == UInt64(pid) else { continue }
        let reply = try await connection.call(
          .methodCall(
            destination: .bus, path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus.Debug.Stats", member: "GetConnectionStats",
            body: [.string(name)]))
        let stats = reply.body.first?.stringDictionary ?? [:]
        if (stats["MatchRules"]?.uint64Value ?? 0) > 0 { return stats }
      }
      try await Task.sleep(for: .milliseconds(20))
    }
    throw DBusError(.timeout, "process \(pid) has no connection with a match rule")
  }

  @Test func aStoppedWatcherCostsTheBusABoundedQueueAndResynchronizesOnItsNextPost()
    async throws
  {
    let name: NotifyName = "group.example.flood"
    var environment = Products.currentEnvironment()
    environment["NOTIFYBUS_BUS_ADDRESS"] = bus.address.rawValue
    environment["DBUS_SESSION_BUS_ADDRESS"] = ""
    let watch = try Subprocess.spawn(
      Products.path("notify-watch"), arguments: ["--json", "--timeout", "120", name.rawValue],
      environment: environment, captureOutput: true, captureError: true)
    defer {
      watch.kill(SIGCONT)
      watch.kill(SIGKILL)
      watch.wait()
    }
    let poster = try await NotifyCenter.connect(to: .address(bus.address))
    _ = try await statistics(ofProcess: watch.pid, via: poster.connection)
    watch.kill(SIGSTOP)
    // About 2 MB of signals, more than the bus keeps queued for one connection and the
    // socket holds.
    for _ in 0..<12_000 { try poster.post(name) }
    try await poster.synchronize()
    let stats = try await statistics(ofProcess: watch.pid, via: poster.connection)
    let queued = try #require(stats["OutgoingBytes"]?.uint64Value)
    // dbus-daemon queues while it holds less than the limit, so one signal may pass it.
    #expect(queued < UInt64(BusConfiguration.maximumOutgoingBytes + 1024), "\(stats)")
    watch.kill(SIGCONT)
    // The watcher reads what the bus kept; once that is out of the bus, the next post from
    // the same poster shows the gap in its count of the name, and the watcher prints a
    // resynchronization line.
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline,
      try await statistics(ofProcess: watch.pid, via: poster.connection)["OutgoingBytes"]?
        .uint64Value ?? 0 > 0
    {
      try await Task.sleep(for: .milliseconds(20))
    }
    try poster.post(name)
    // Only this closure reads the watcher's output meanwhile.
    nonisolated(unsafe) let output = watch
    let resynchronized = try await offThePool {
      while ContinuousClock.now < deadline {
        let line = output.readLine(milliseconds: 1000)
        if line?.contains("\"resynchronization\":true") == true { return true }
      }
      return false
    }
    #expect(resynchronized)
    await poster.close()
  }
}
