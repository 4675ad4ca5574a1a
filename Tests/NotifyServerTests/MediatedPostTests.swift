import BusTestSupport
import DBus
import Notify
import NotifyServer
import Testing

@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct MediatedPostTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  @Test func receiversInMediatedModeIgnoreRoguePostedSignals() async throws {
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    let receiver = try await NotifyCenter.connect(to: .address(bus.address), mediated: true)
    #expect(receiver.isMediated)
    #expect(receiver.mediatingService != nil)
    let token = try await receiver.registerCheck("group.example.guarded")
    #expect(try receiver.check(token))
    let rogue = try await NotifyCenter.connect(to: .address(bus.address), mediated: false)
    try rogue.post("group.example.guarded")
    try await rogue.synchronize()
    let plain = try await NotifyCenter.connect(to: .address(bus.address))
    let plainToken = try await plain.registerCheck("group.example.guarded")
    #expect(try plain.check(plainToken))
    try rogue.post("group.example.guarded")
    try await rogue.synchronize()
    try await waitUntil {
      try plain.postCount(plainToken) >= 1 && receiver.statistics.malformedSignals >= 2
    }
    #expect(try plain.check(plainToken), "a non-mediated receiver takes the direct post")
    #expect(try !receiver.check(token), "a mediated receiver ignores it")
    #expect(receiver.statistics.malformedSignals == 2)
    // A mediated post arrives, from notifyd.
    let poster = try await NotifyCenter.connect(to: .address(bus.address), mediated: true)
    try await poster.postChecked("group.example.guarded")
    try await waitUntil { try receiver.postCount(token) >= 1 }
    #expect(try receiver.check(token))
    #expect(try receiver.postCount(token) == 1)
    _ = daemon
  }

  @Test func mediatedPostsWithoutNotifydReportServerNotFound() async throws {
    let poster = try await NotifyCenter.connect(to: .address(bus.address), mediated: true)
    #expect(poster.mediatingService == nil)
    let error = await #expect(throws: NotifyError.self) {
      try await poster.postChecked("group.example.nobody")
    }
    #expect(error?.status == .serverNotFound)
    // The unchecked post does not block or fail.
    try poster.post("group.example.nobody")
  }

  @Test func theReceiverFollowsANewNotifyd() async throws {
    let first = try await NotifydProcess(bus: bus, ["--no-persist"])
    let receiver = try await NotifyCenter.connect(to: .address(bus.address), mediated: true)
    let before = receiver.mediatingService
    #expect(before != nil)
    _ = first.terminate()
    try await NotifydProcess.waitForOwner(bus, present: false)
    let second = try await NotifydProcess(bus: bus, ["--no-persist"])
    await waitUntil {
      receiver.mediatingService != nil && receiver.mediatingService != before
    }
    #expect(receiver.mediatingService != nil && receiver.mediatingService != before)
    let token = try await receiver.registerCheck("group.example.next")
    _ = try receiver.check(token)
    let poster = try await NotifyCenter.connect(to: .address(bus.address), mediated: true)
    try await poster.postChecked("group.example.next")
    try await waitUntil { try receiver.postCount(token) >= 1 }
    #expect(try receiver.check(token))
    _ = second
  }
}
