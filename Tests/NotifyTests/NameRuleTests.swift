import BusTestSupport
import DBus
import Dispatch
import Notify
import Testing

/// Names' match rules live in the center's rule sets: plain names, names whose interface
/// escapes bytes, and names long enough for a hashed interface.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct NameRuleTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  func center() async throws -> NotifyCenter {
    try await NotifyCenter.connect(to: .address(bus.address))
  }

  @Test func plainEscapedAndHashedNamesEachReachOnlyTheirRegistrations() async throws {
    let watcher = try await center()
    let poster = try await center()
    let long = try NotifyName("group.example." + String(repeating: "x_", count: 150))
    #expect(NotifyWire.interface(for: long).rawValue.hasPrefix(NotifyWire.hashedInterfacePrefix))
    let names: [NotifyName] = ["group.example.plain", "group.example.9-escaped_name", long]
    let counters = names.map { _ in Counter() }
    var tokens: [NotifyToken] = []
    for (name, counter) in zip(names, counters) {
      tokens.append(
        try await watcher.register(name, queue: DispatchQueue(label: "q")) { _ in
          counter.increment()
        })
    }
    #expect(await watcher.connection.matchRuleCount == 3)
    for (index, name) in names.enumerated() {
      try poster.post(name)
      #expect(await counters[index].wait(for: 1) == 1, "\(name)")
    }
    try await poster.synchronize()
    try await settle()
    #expect(counters.map(\.count) == [1, 1, 1])
    #expect(watcher.statistics.malformedSignals == 0)
    // Cancelling the last registration of a name removes its rule.
    for token in tokens { try watcher.cancel(token) }
    await waitUntil { await watcher.connection.matchRuleCount == 0 }
    #expect(await watcher.connection.matchRuleCount == 0)
  }

  @Test func aPostedSignalWhoseNameIsNotItsInterfacesIsIgnored() async throws {
    let watcher = try await center()
    let counter = Counter()
    let watched: NotifyName = "group.example.watched"
    let other: NotifyName = "group.example.other"
    _ = try await watcher.register(watched, queue: DispatchQueue(label: "q")) { _ in
      counter.increment()
    }
    _ = try await watcher.registerCheck(other)
    let rogue = try await BusConnection.connect(to: .address(bus.address))
    // The interface of one registered name with the other's name in it.
    try rogue.send(
      .signal(
        path: NotifyWire.path, interface: NotifyWire.interface(for: watched), member: "Posted",
        body: [.string(other.rawValue)]))
    try await rogue.flush()
    await waitUntil { watcher.statistics.malformedSignals == 1 }
    #expect(watcher.statistics.malformedSignals == 1)
    #expect(counter.count == 0)
    await rogue.close()
  }
}
