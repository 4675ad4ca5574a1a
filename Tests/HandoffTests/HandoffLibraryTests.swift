import AppGroups
import BusTestSupport
import DBus
import ExtensionItems
import Foundation
import Handoff
import Notify
import Synchronization
import Testing

/// The Handoff library in one process: a sender and an importer on a private bus.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct HandoffLibraryTests {
  static func item(_ url: String, title: String = "A page") -> ExtensionItem {
    ExtensionItem(
      attributedTitle: AttributedText(title),
      attachments: [ItemProvider(url: URL(string: url)!), ItemProvider(text: "Some text")])
  }

  @Test func filesTravelAsSpoolAttachmentsAndComeBackAsAbsolutePaths() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let image = fixture.bus.directory + "/photo.png"
    let imageBytes = Data((0..<5000).map { UInt8($0 % 251) })
    try imageBytes.write(to: URL(fileURLWithPath: image))
    let big = Data(repeating: 7, count: HandoffSender.inlineDataLimit + 1)
    var item = Self.item("https://example.com/a")
    item.attachments.append(ItemProvider(fileAtPath: image))
    item.attachments.append(ItemProvider(data: big, type: .pdf))
    let id = try await sender.send([item])

    // The stored payload holds references, not the bytes.
    let spool = try Spool(container: fixture.container(), name: HandoffSender.defaultSpoolName)
    let importer = try await fixture.importer()
    var received: [ReceivedShare] = []
    var loaded: [Data] = []
    try await importer.drainPending { share in
      received.append(share)
      for provider in share.items[0].attachments where provider.hasItemConforming(to: .data) {
        if case .file(let path) = provider.representations[0].content {
          #expect(path.hasPrefix("/"))
          loaded.append(try Data(contentsOf: URL(fileURLWithPath: path)))
        }
      }
    }
    #expect(received.map(\.id) == [id])
    #expect(received[0].attachments.count == 2)
    #expect(loaded == [imageBytes, big])
    #expect(received[0].url?.absoluteString == "https://example.com/a")
    #expect(received[0].items[0].attributedTitle?.string == "A page")
    #expect(try spool.pendingCount() == 0)
    #expect(importer.importedCount == 1)
  }

  @Test func aPayloadHoldsNoAttachmentBytes() async throws {
    let fixture = try HandoffFixture()
    let container = try fixture.container()
    let image = fixture.bus.directory + "/big.jpg"
    try Data(repeating: 0xAB, count: 200_000).write(to: URL(fileURLWithPath: image))
    let spool = try Spool(container: container, name: "check")
    let sender = try HandoffSender(
      container: container, notification: "group.example.saved",
      center: await fixture.center(), spoolName: "check")
    var item = Self.item("https://example.com/b")
    item.attachments.append(ItemProvider(fileAtPath: image))
    try sender.store([item])
    try spool.drain { entry in
      #expect(entry.payload.count < 10_000)
      #expect(entry.attachments.map(\.size) == [200_000])
    }
  }

  @Test func aHandlerErrorKeepsTheShareForTheNextDrain() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let first = try await sender.send([Self.item("https://example.com/1")])
    let second = try await sender.send([Self.item("https://example.com/2")])
    let importer = try await fixture.importer(deduplication: .byURL())
    struct Refused: Error {}
    await #expect(throws: Refused.self) {
      try await importer.drainPending { _ in throw Refused() }
    }
    var ids: [String] = []
    let report = try await importer.drainPending { ids.append($0.id) }
    #expect(ids == [first, second])
    #expect(report.imported == 2)
    #expect(report.duplicates == 0)
  }

  @Test func duplicatesByURLAreDroppedAcrossDrains() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    try await sender.send([Self.item("https://example.com/same")])
    try await sender.send([Self.item("https://example.com/same", title: "again")])
    try await sender.send([Self.item("https://example.com/other")])
    let importer = try await fixture.importer(deduplication: .byURL())
    var titles: [String] = []
    var report = try await importer.drainPending {
      titles.append($0.items[0].attributedTitle?.string ?? "")
    }
    #expect(titles == ["A page", "A page"])
    #expect(report.duplicates == 1)
    try await sender.send([Self.item("https://example.com/same", title: "later")])
    report = try await importer.drainPending { _ in Issue.record("a duplicate was delivered") }
    #expect(report.duplicates == 1)
  }

  @Test func runDrainsAtStartAndOnEveryPost() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    for index in 0..<3 { try sender.store([Self.item("https://example.com/early/\(index)")]) }
    let importer = try await fixture.importer()
    let seen = Mutex<[String]>([])
    let (progress, tick) = AsyncStream.makeStream(of: Int.self)
    let task = Task {
      try await importer.run { share in
        let count = seen.withLock { list in
          list.append(share.url?.absoluteString ?? "")
          return list.count
        }
        tick.yield(count)
      }
    }
    defer { task.cancel() }
    for await count in progress where count == 3 { break }
    for index in 0..<5 { try await sender.send([Self.item("https://example.com/late/\(index)")]) }
    for await count in progress where count == 8 { break }
    task.cancel()
    #expect(seen.withLock { $0.count } == 8)
    #expect(seen.withLock { $0.suffix(5) } == (0..<5).map { "https://example.com/late/\($0)" })
  }

  /// A sender takes its segment when it is made, on a Dispatch thread, so its first share
  /// is written at once on the sending task, with no flush before it is readable.
  @Test func aSenderTakesItsSegmentWhenItIsMade() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let segments = try FileManager.default.contentsOfDirectory(
      atPath: sender.spool.path + "/segments")
    #expect(segments.filter { $0.hasSuffix(".seg") }.count == 1, "\(segments)")
    let pending = try #require(try sender.spool.writeRecord(payload: [1], id: "first"))
    try sender.spool.commit(pending)
  }

  /// A share sent right after its sender is made (the usual extension case: make, then send
  /// at once, while the sender is still taking its segment) goes into the segment the sender
  /// takes, and reaches the app once (`Protocol/handoff.md` §3).
  @Test func aShareSentRightAfterTheSenderIsMadeGoesIntoTheSegmentItTakes() async throws {
    let fixture = try HandoffFixture()
    let sender = try HandoffSender(
      container: fixture.container(), notification: NotifyName(HandoffFixture.notification),
      center: await fixture.center())
    let id = try await sender.send([Self.item("https://example.com/at-once")])
    sender.spool.waitForSegmentPreparation()
    let segments = try FileManager.default.contentsOfDirectory(
      atPath: sender.spool.path + "/segments")
    #expect(segments.filter { $0.hasSuffix(".seg") }.count == 1, "\(segments)")
    let importer = try await fixture.importer()
    var received: [String] = []
    try await importer.drainPending { received.append($0.id) }
    try await importer.drainPending { received.append($0.id) }
    #expect(received == [id])
  }

  /// A send from a cancelled task returns only once the bus routed its doorbell
  /// (`Protocol/handoff.md` §3), so an extension whose task was cancelled (a time limit) and
  /// that then exits does not take its post with it.
  ///
  /// The bus is stopped (SIGSTOP) while a cancelled task sends: it routes nothing, so the
  /// send must not return before the bus runs again, after which a watcher gets the
  /// doorbell. The first share has an attachment file (stored off the pool), the second is
  /// a record written on the sender's own task.
  @Test func aSendFromACancelledTaskReturnsOnlyOnceTheBusRoutedItsDoorbell() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let watcher = try await fixture.center()
    let rung = Mutex(0)
    _ = try await watcher.register(NotifyName(HandoffFixture.notification), queue: nil) { _ in
      rung.withLock { $0 += 1 }
    }
    let daemon = try #require(fixture.bus.pid)
    for round in 1...2 {
      let returned = Mutex(false)
      let send: Task<String, any Error>
      let early: Bool
      Glibc.kill(daemon, SIGSTOP)
      do {
        defer { Glibc.kill(daemon, SIGCONT) }
        var item = Self.item("https://example.com/cancelled/\(round)")
        if round == 1 {
          item.attachments.append(
            ItemProvider(data: Data(count: HandoffSender.inlineDataLimit + 1), type: .pdf))
        }
        send = Task { [item] in
          withUnsafeCurrentTask { $0?.cancel() }
          defer { returned.withLock { $0 = true } }
          return try await sender.send([item])
        }
        try await Task.sleep(for: .seconds(1))
        early = returned.withLock { $0 }
      }
      _ = try await send.value
      #expect(!early, "send \(round) returned while the bus was stopped")
      let deadline = ContinuousClock.now + .seconds(20)
      while rung.withLock({ $0 }) < round && ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(10))
      }
      #expect(rung.withLock { $0 } == round, "the doorbell of send \(round)")
    }
    let spool = try Spool(container: fixture.container(), name: HandoffSender.defaultSpoolName)
    #expect(try spool.pendingCount() == 2)
  }

  /// The thread that reads a doorbell drains: the handler of `run`, called from code not
  /// isolated to an actor, runs on the center's connection thread, at start and for every
  /// share rung for.
  @Test func runHandsSharesOverOnTheThreadThatReadTheDoorbell() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    try sender.store([Self.item("https://example.com/early")])
    let importer = try await fixture.importer()
    let (threads, tick) = AsyncStream.makeStream(of: Bool.self)
    let task = Task.detached {
      try await importer.run { _ in tick.yield(importer.center.connection.isOnConnectionThread) }
    }
    defer { task.cancel() }
    var onConnectionThread = threads.makeAsyncIterator()
    #expect(await onConnectionThread.next() == true, "the drain at start")
    for index in 0..<3 {
      try await sender.send([Self.item("https://example.com/late/\(index)")])
      #expect(await onConnectionThread.next() == true, "share \(index)")
    }
  }

  /// When the bus dropped rings for the importer (a gap in a poster's count of the
  /// name), the importer drains, as after a reconnect (issue 11, item 13).
  @Test func aGapInTheRingsDrains() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let importer = try await fixture.importer()
    let (drains, tick) = AsyncStream.makeStream(of: String.self)
    let task = Task {
      try await importer.run(onDrain: { event in
        tick.yield(event.map { $0.isResynchronization ? "resynchronized" : "ring" } ?? "start")
      }) { share in tick.yield(share.url?.absoluteString ?? "") }
    }
    defer { task.cancel() }
    var events = drains.makeAsyncIterator()
    #expect(await events.next() == "start")
    // Ring 1 arrives; ring 2, for the share stored next, is "dropped" by the bus; ring 3
    // shows the gap.
    let poster = try await BusConnection.connect(to: .address(fixture.bus.address))
    let name = try NotifyName(HandoffFixture.notification)
    try poster.send(NotifyWire.signal(for: name, sequence: 1, nameSequence: 1))
    #expect(await events.next() == "ring")
    _ = try sender.store([Self.item("https://example.com/dropped")])
    try poster.send(NotifyWire.signal(for: name, sequence: 3, nameSequence: 3))
    var seen: [String] = []
    while let next = await events.next() {
      seen.append(next)
      if next == "resynchronized" { break }
    }
    // The share went with ring 1's drain or goes with the resynchronization's.
    if !seen.contains("https://example.com/dropped") {
      #expect(await events.next() == "https://example.com/dropped")
    }
    #expect(seen.last == "resynchronized", "\(seen)")
    await poster.close()
  }

  /// A running importer drains a share no doorbell announces: its spool watch sees the
  /// record written (and an entry with attachments renamed into `new/`), and tells
  /// `onDrain` no doorbell (`nil`).
  @Test func aShareStoredWithoutADoorbellReachesARunningImporter() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let importer = try await fixture.importer()
    let (arrivals, arrived) = AsyncStream.makeStream(of: String.self)
    let reasons = Mutex<[String]>([])
    let task = Task {
      try await importer.run(onDrain: { event in
        reasons.withLock { $0.append(event == nil ? "no doorbell" : "doorbell") }
      }) { share in arrived.yield(share.url?.absoluteString ?? "") }
    }
    defer { task.cancel() }
    // The importer is running once its drain at start has begun.
    let deadline = ContinuousClock.now + .seconds(10)
    while reasons.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(5))
    }
    var received = arrivals.makeAsyncIterator()
    try sender.store([Self.item("https://example.com/unannounced")])
    #expect(await received.next() == "https://example.com/unannounced")
    let file = fixture.bus.directory + "/note.txt"
    #expect(FileManager.default.createFile(atPath: file, contents: Data("a note".utf8)))
    try sender.store([
      ExtensionItem(
        attributedTitle: AttributedText("A file"),
        attachments: [
          ItemProvider(url: URL(string: "https://example.com/with-a-file")!),
          ItemProvider(fileAtPath: file),
        ])
    ])
    #expect(await received.next() == "https://example.com/with-a-file")
    #expect(!reasons.withLock { $0 }.contains("doorbell"), "\(reasons.withLock { $0 })")
  }

  @Test func aPostDuringADrainTriggersAnotherDrain() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let importer = try await fixture.importer()
    let seen = Mutex<[String]>([])
    let (progress, tick) = AsyncStream.makeStream(of: Int.self)
    let drains = Mutex(0)
    try sender.store([Self.item("https://example.com/first")])
    let task = Task {
      try await importer.run(onDrain: { _ in drains.withLock { $0 += 1 } }) { share in
        let url = share.url?.absoluteString ?? ""
        if url.hasSuffix("first") {
          // Stored and posted while this drain is busy with the first share: the drain may
          // or may not see it; if it does not, the post must cause another drain.
          try await sender.send([Self.item("https://example.com/second")])
        }
        let count = seen.withLock { list in
          list.append(url)
          return list.count
        }
        tick.yield(count)
      }
    }
    defer { task.cancel() }
    for await count in progress where count == 2 { break }
    task.cancel()
    #expect(seen.withLock { $0 } == ["https://example.com/first", "https://example.com/second"])
    #expect(drains.withLock { $0 } >= 1)
  }

  @Test func theSequenceAcknowledgesOnNextAndRedeliversTheShareInHand() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    var ids: [String] = []
    for index in 0..<3 { ids.append(try sender.store([Self.item("https://example.com/\(index)")])) }
    let importer = try await fixture.importer()
    var taken: [String] = []
    for try await share in importer.shares() {
      taken.append(share.id)
      if taken.count == 2 { break }
    }
    #expect(taken == Array(ids.prefix(2)))
    // The second share was in hand when the loop ended: it is delivered again.
    var again: [String] = []
    try await waitUntil(every: .milliseconds(20)) {
      again = []
      do {
        try await importer.drainPending { again.append($0.id) }
        return true
      } catch  where (error as? HandoffError)?.message.contains("Another process") == true {
        return false
      }
    }
    #expect(again == Array(ids.suffix(2)))
  }

  @Test func anExtensionContextEndsOnce() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let context = ExtensionContext(inputItems: [Self.item("https://example.com/c")], sender: sender)
    let id = try await context.completeRequest(returningItems: context.inputItems)
    #expect(id != nil)
    await #expect(throws: HandoffError.self) {
      try await context.completeRequest(returningItems: context.inputItems)
    }
    #expect(throws: HandoffError.self) { try context.cancelRequest(withError: CancellationError()) }

    let cancelled = ExtensionContext(
      inputItems: [Self.item("https://example.com/d")], sender: sender)
    try cancelled.cancelRequest(withError: CancellationError())
    if case .cancelled? = cancelled.outcome {} else { Issue.record("not cancelled") }
    await #expect(throws: HandoffError.self) {
      try await cancelled.completeRequest(returningItems: cancelled.inputItems)
    }
    #expect(try fixture.pendingInSpool() == 1)
  }

  @Test func undecodableSharesAreKeptAsideAndSkipped() async throws {
    let fixture = try HandoffFixture()
    let container = try fixture.container()
    let spool = try Spool(container: container, name: HandoffSender.defaultSpoolName)
    try spool.enqueue(payload: Array("not an item message".utf8), id: "garbage")
    let sender = try await fixture.sender()
    let good = try await sender.send([Self.item("https://example.com/good")])
    let importer = try await fixture.importer()
    var ids: [String] = []
    let report = try await importer.drainPending { ids.append($0.id) }
    #expect(ids == [good])
    #expect(report.undecodable == 1)
    #expect(
      FileManager.default.fileExists(atPath: container.path + "/handoff-rejected/garbage.items"))
  }
}
