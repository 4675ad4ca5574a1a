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
  /// The round trip after a doorbell is written with it, and `send` waits for the flush too.
  ///
  /// A share stored as a record is rung for as soon as it is written, and the round trip
  /// that tells the doorbell was routed (`Peer.Ping`) is written right after the doorbell,
  /// so that the bus answers it while the share is flushed (before, it started once the
  /// flush ended, and the sender waited for one after the other). The flush is held here:
  /// the bus, watched with dbus-monitor, sees the doorbell and the round trip, and `send`
  /// returns only once the flush is let go.
  @Test func theRoundTripAfterADoorbellIsWrittenWithItAndSendWaitsForTheFlush() async throws {
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
    let returned = Mutex(false)
    let send = Task {
      defer { returned.withLock { $0 = true } }
      return try await sender.send([
        ExtensionItem(
          attributedTitle: AttributedText("A page"),
          attachments: [ItemProvider(url: URL(string: "https://example.com/order")!)])
      ])
    }
    var lines = await reader.lines(milliseconds: 10_000) { $0.contains("member=Posted") }
    #expect(lines.last?.contains("member=Posted") == true, "the doorbell: \(lines)")
    // While the flush is held: the round trip, and no return.
    lines = await reader.lines(milliseconds: 10_000) { $0.contains("member=Ping") }
    #expect(lines.last?.contains("member=Ping") == true, "the round trip: \(lines)")
    let deadline = ContinuousClock.now + .seconds(10)
    while !flushing.withLock({ $0 }) && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(5))
    }
    #expect(flushing.withLock { $0 }, "the flush began")
    try await Task.sleep(for: .milliseconds(300))
    #expect(!returned.withLock { $0 }, "send returned before the share was flushed")
    released.signal()
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
