import BusTestSupport
import DBus
import ExtensionItems
import Foundation
import Handoff
import Synchronization
import SystemSupport
import Testing

@testable import AppGroups

/// The order of what `HandoffSender.send` does on the bus and on the disk.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct HandoffSendOrderTests {
  /// The round trip after a doorbell starts once the share is flushed.
  ///
  /// A share stored as a record is rung for as soon as it is written, and the round trip
  /// that tells the doorbell was routed (`Peer.Ping`) starts only once the share's flush
  /// ended: made at once, it ran beside the app's wake-up and drain. The flush is held
  /// here; the bus, watched with dbus-monitor, sees the doorbell and no round trip until
  /// the flush is let go.
  @Test func theRoundTripAfterADoorbellStartsOnceTheShareIsFlushed() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let monitor = try Subprocess.spawn(
      "dbus-monitor",
      arguments: [
        "--address", fixture.bus.address.rawValue, "type='method_call',member='Ping'",
        "type='signal',member='Posted'",
      ],
      captureOutput: true)
    defer {
      monitor.kill()
      monitor.wait()
    }
    // Its output is read on a Dispatch thread: the send needs the concurrency pool meanwhile.
    let reader = MonitorReader(monitor)
    // dbus-monitor is monitoring once it has given up the name the bus gave it.
    let ready = await reader.lines(milliseconds: 10_000) { $0.contains("member=NameLost") }
    try #require(ready.last?.contains("member=NameLost") == true, "\(ready)")

    let flushing = Mutex(false)
    let released = DispatchSemaphore(value: 0)
    sender.spool.segmentWriter.commitFault.withLock {
      $0 = {
        flushing.withLock { $0 = true }
        released.wait()
      }
    }
    defer { sender.spool.segmentWriter.commitFault.withLock { $0 = nil } }
    let send = Task {
      try await sender.send([
        ExtensionItem(
          attributedTitle: AttributedText("A page"),
          attachments: [ItemProvider(url: URL(string: "https://example.com/order")!)])
      ])
    }
    var lines = await reader.lines(milliseconds: 10_000) { $0.contains("member=Posted") }
    #expect(lines.last?.contains("member=Posted") == true, "the doorbell: \(lines)")
    let deadline = ContinuousClock.now + .seconds(10)
    while !flushing.withLock({ $0 }) && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(5))
    }
    #expect(flushing.withLock { $0 }, "the flush began")
    // While the flush is held, no round trip.
    let early = await reader.lines(milliseconds: 500) { $0.contains("member=Ping") }
    #expect(
      !early.contains { $0.contains("member=Ping") }, "a round trip before the flush: \(early)")
    released.signal()
    lines = await reader.lines(milliseconds: 10_000) { $0.contains("member=Ping") }
    #expect(lines.last?.contains("member=Ping") == true, "the round trip after it: \(lines)")
    _ = try await send.value
    let spool = try Spool(container: fixture.container(), name: HandoffSender.defaultSpoolName)
    #expect(try spool.pendingCount() == 1)
  }

  /// A sender takes the quota check's first listing when it is made, on a Dispatch thread,
  /// so that its first share lists nothing before it is readable.
  @Test func aSenderTakesItsQuotaListingWhenItIsMade() async throws {
    let fixture = try HandoffFixture()
    let other = try await fixture.sender()
    try other.store([
      ExtensionItem(
        attributedTitle: AttributedText("Waiting"),
        attachments: [ItemProvider(url: URL(string: "https://example.com/waiting")!)])
    ])
    let sender = try await fixture.sender()
    let deadline = ContinuousClock.now + .seconds(10)
    while sender.spool.usageCache.withLock({ $0 == nil }) && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(5))
    }
    #expect(sender.spool.usageCache.withLock { $0?.entries } == 1, "the listing saw the share")
  }
}

/// Reads a child's lines on a Dispatch thread (``readLines(_:milliseconds:until:)``), one
/// read at a time, so that a test waiting for them leaves the concurrency pool free.
private final class MonitorReader: @unchecked Sendable {
  private let process: Subprocess

  init(_ process: Subprocess) { self.process = process }

  func lines(milliseconds: Int, until predicate: @escaping @Sendable (String) -> Bool) async
    -> [String]
  {
    await runBlocking { readLines(self.process, milliseconds: milliseconds, until: predicate) }
  }
}
