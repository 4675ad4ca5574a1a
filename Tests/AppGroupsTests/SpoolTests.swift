import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import AppGroups

struct SpoolTests {
  /// Drains everything, returning the entries' ids and payloads in handover order.
  func drainAll(_ spool: Spool) throws -> (ids: [String], summary: DrainSummary) {
    var ids: [String] = []
    let summary = try spool.drain { ids.append($0.id) }
    return (ids, summary)
  }

  @Test func deliversPayloadAndAttachmentsThenRemovesThem() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let source = temporary.path + "/photo.jpg"
    try Data(repeating: 7, count: 300_000).write(to: URL(fileURLWithPath: source))
    try spool.enqueue(
      payload: Array("item".utf8),
      attachments: [.file(URL(fileURLWithPath: source)), .data(Data("note".utf8), name: "n.txt")],
      id: "first")
    #expect(try spool.pendingCount() == 1)
    var seen: [SpoolEntry] = []
    let summary = try spool.drain { (entry) throws in
      seen.append(entry)
      #expect(entry.payload == Array("item".utf8))
      #expect(entry.attachments.map(\.name) == ["photo.jpg", "n.txt"])
      #expect(try Data(contentsOf: entry.attachments[0].url) == Data(repeating: 7, count: 300_000))
      #expect(try Data(contentsOf: entry.attachments[1].url) == Data("note".utf8))
    }
    #expect(summary.delivered == 1)
    #expect(seen.map(\.id) == ["first"])
    let expected = try temporary.container().path + "/spool/default/cur/"
    #expect(seen[0].attachments[0].url.path.hasPrefix(expected))
    #expect(try spool.pendingCount() == 0)
    #expect(FileManager.default.fileExists(atPath: source))
    #expect(try FileManager.default.contentsOfDirectory(atPath: spool.path + "/cur").isEmpty)
  }

  @Test func handsOverInEnqueueOrder() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let ids = (0..<50).map { "item-\(($0 * 37) % 50)" }
    for id in ids { try spool.enqueue(payload: Array(id.utf8), id: id) }
    #expect(try drainAll(spool).ids == ids)
  }

  @Test func handsEachIdOverOnce() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    try spool.enqueue(payload: [1], id: "same")
    try spool.enqueue(payload: [2], id: "same")
    let first = try drainAll(spool)
    #expect(first.ids == ["same"])
    #expect(first.summary.duplicates == 1)
    // A producer retrying after a crash enqueues it again: still not delivered twice,
    // even through a new Spool instance (another process).
    try spool.enqueue(payload: [3], id: "same")
    let again = try Spool(container: temporary.container())
    let second = try drainAll(again)
    #expect(second.ids.isEmpty)
    #expect(second.summary.duplicates == 1)
  }

  /// Two consumers (instances) that each keep `delivered.keys`, `drain.lock` and their
  /// listings open between drains: each drain still sees what the other delivered since
  /// (a record written into the zeros of the same file, its size unchanged).
  @Test func consumersTakingTurnsSeeEachOthersDeliveries() throws {
    let temporary = TemporaryDirectory()
    let producer = try Spool(container: temporary.container())
    let consumers = try (0..<2).map { _ in try Spool(container: temporary.container()) }
    for round in 0..<6 {
      let id = "turn-\(round)"
      try producer.enqueue(payload: [UInt8(round)], id: id)
      let first = try drainAll(consumers[round % 2])
      #expect(first.ids == [id])
      // Enqueued again (a retrying producer): the other consumer drops it as delivered.
      try producer.enqueue(payload: [UInt8(round)], id: id)
      let second = try drainAll(consumers[(round + 1) % 2])
      #expect(second.ids.isEmpty, "round \(round)")
      #expect(second.summary.duplicates == 1, "round \(round)")
    }
    #expect(try drainAll(consumers[0]).ids.isEmpty)
  }

  /// Both kinds: a record in a segment, and an entry with an attachment (a directory that a
  /// drain claims into `cur/`, so the retry counts it as recovered).
  @Test(arguments: [false, true])
  func keepsAnEntryWhoseHandlerFailed(asFiles: Bool) throws {
    struct HandlerFailure: Error {}
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let attachments: [SpoolAttachment] = asFiles ? [.data(Data([1]), name: "x")] : []
    try spool.enqueue(payload: [1], attachments: attachments, id: "a")
    try spool.enqueue(payload: [2], attachments: attachments, id: "b")
    try spool.enqueue(payload: [3], attachments: attachments, id: "c")
    #expect(throws: HandlerFailure.self) {
      try spool.drain { entry in if entry.id == "b" { throw HandlerFailure() } }
    }
    #expect(try spool.pendingCount() == 2)
    let retry = try drainAll(spool)
    #expect(retry.ids == ["b", "c"])
    #expect(retry.summary.recovered == (asFiles ? 1 : 0))
  }

  @Test func writesEachIdAsItsHandlerReturnsAndRemovesEntriesAfterTheSharedFlush() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let ids = (0..<100).map { String(format: "e%03d", $0) }
    // Files in new/ (the layout before segments), which a drain claims into cur/.
    let base = Spool.nextEnqueueTime()
    for (index, id) in ids.enumerated() {
      try writeLegacyEntry(spool, id: id, time: base + Int64(index), payload: Array(id.utf8))
    }
    let log = spool.path + "/delivered.keys"
    func claimed() throws -> Set<String> {
      Set(
        try FileManager.default.contentsOfDirectory(atPath: spool.path + "/cur").compactMap {
          $0.split(separator: ".").last.map(String.init)
        })
    }
    var index = 0
    try spool.drain { entry in
      #expect(entry.id == ids[index])
      // Every id handed over before is written, where another process would read it.
      let bytes = FileManager.default.contents(atPath: log).map { [UInt8]($0) } ?? []
      let written =
        bytes.isEmpty ? [] : KeyLogFormat.parseRecords(bytes, from: KeyLogFormat.headerSize).keys
      #expect(written == Array(ids[0..<index]))
      if index == 70 {
        // The first 64 ids (the log created with the first, without a flush) were flushed
        // together when they were waiting, and removed; the six after them wait (and the
        // one in the handler).
        let left = try claimed()
        #expect(left.isDisjoint(with: ids[0..<64]))
        #expect(left.isSuperset(of: ids[64...70]))
      }
      index += 1
    }
    #expect(index == 100)
    #expect(try claimed().isEmpty)
    #expect(try spool.pendingCount() == 0)
  }

  /// The quota check's listing is renewed after an enqueue's flush once it is half its
  /// lifetime old, so the next enqueue lists nothing before its entry is readable.
  @Test func aCommitRenewsAnAgingQuotaListingForTheNextEnqueue() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    try spool.enqueue(payload: [1], id: "a")
    try spool.enqueue(payload: [1], id: "b")
    func taken() -> UInt64 { spool.usageCache.withLock { $0?.taken ?? 0 } }
    let pending = try #require(try spool.writeRecord(payload: [2], id: "c"))
    // Three quarters of its lifetime old: the commit renews it.
    spool.usageCache.withLock { $0?.taken -= Spool.usageListingLifetime * 3 / 4 }
    let before = DispatchTime.now().uptimeNanoseconds
    try spool.commit(pending)
    #expect(taken() >= before, "the commit did not renew the listing")
    #expect(spool.usageCache.withLock { $0?.entries } == 3)
  }

  /// A listing taken ahead of need (``Spool/prepareQuotaListing()``) is there for the
  /// first enqueue of a fresh instance, which then counts its entry into it once.
  @Test func aQuotaListingTakenAheadServesTheFirstEnqueue() throws {
    let temporary = TemporaryDirectory()
    try Spool(container: temporary.container()).enqueue(payload: [1], id: "a")
    let spool = try Spool(container: temporary.container())
    #expect(spool.usageCache.withLock { $0 == nil })
    spool.prepareQuotaListing()
    let deadline = DispatchTime.now().uptimeNanoseconds + 10_000_000_000
    while spool.usageCache.withLock({ $0 == nil }), DispatchTime.now().uptimeNanoseconds < deadline
    {
      usleep(1000)
    }
    #expect(spool.usageCache.withLock { $0?.entries } == 1, "the listing taken ahead")
    try spool.enqueue(payload: [2], id: "b")
    #expect(spool.usageCache.withLock { $0?.entries } == 2)
  }

  @Test func recoversEntriesClaimedByACrashedConsumer() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let base = Spool.nextEnqueueTime()
    try writeLegacyEntry(spool, id: "claimed", time: base, payload: [1])
    try writeLegacyEntry(spool, id: "fresh", time: base + 1, payload: [2])
    // What a consumer killed inside its handler leaves behind: the entry in cur/.
    let name = try #require(
      try FileManager.default.contentsOfDirectory(atPath: spool.path + "/new").sorted().first)
    #expect(rename(spool.path + "/new/" + name, spool.path + "/cur/" + name) == 0)
    let result = try drainAll(spool)
    #expect(result.ids == ["claimed", "fresh"])
    #expect(result.summary.recovered == 1)
  }

  @Test func drainsInAsyncContexts() async throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    try spool.enqueue(payload: [9], id: "async")
    var ids: [String] = []
    let summary = try await spool.drain { (entry: SpoolEntry) async throws in
      await Task.yield()
      ids.append(entry.id)
    }
    #expect(ids == ["async"])
    #expect(summary.delivered == 1)
  }

  /// Entries arrive once each and in order wherever the asynchronous drain runs its steps.
  ///
  /// Quick steps (records, with no flush due) run on the caller's executor, the others on a
  /// Dispatch thread: its first drain, files with attachments, the flush when 64 ids wait, a
  /// lock another consumer holds. Whichever way each step
  /// runs, entries arrive once each, in order, and `maxEntries` holds.
  @Test(.timeLimit(.minutes(2))) func anAsyncDrainHandsOverOnceInOrderWhereverItsStepsRun()
    async throws
  {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    var expected: [String] = []
    for index in 0..<150 {
      let id = String(format: "a%03d", index)
      let attachments: [SpoolAttachment] =
        index % 25 == 0 ? [.data(Data(id.utf8), name: "file.bin")] : []
      try spool.enqueue(payload: Array(id.utf8), attachments: attachments, id: id)
      expected.append(id)
    }
    var ids: [String] = []
    // The instance's first drain (begun on a Dispatch thread), stopped early.
    var summary = try await spool.drain(maxEntries: 10) { (entry: SpoolEntry) async throws in
      #expect(entry.payload == Array(entry.id.utf8))
      ids.append(entry.id)
    }
    #expect(summary.delivered == 10)
    // A warm drain (begun on the caller's thread), stopped early again, then to the end.
    summary = try await spool.drain(maxEntries: 5) { (entry: SpoolEntry) async throws in
      ids.append(entry.id)
    }
    #expect(summary.delivered == 5)
    summary = try await spool.drain { (entry: SpoolEntry) async throws in
      await Task.yield()
      ids.append(entry.id)
    }
    #expect(summary.delivered == 135)
    #expect(ids == expected)
    #expect(try spool.pendingCount() == 0)

    // Another consumer holds the lock: the warm drain waits for it, or refuses.
    let other = try Spool(container: temporary.container())
    try spool.enqueue(payload: [1], id: "late")
    let holding = DispatchSemaphore(value: 0)
    let holder = Thread {
      _ = try? other.drain { _ in
        holding.signal()
        usleep(300_000)
      }
    }
    try other.enqueue(payload: [2], id: "later")
    holder.start()
    holding.wait()
    await #expect(throws: ContainerError.self) {
      try await spool.drain(waitForOtherConsumers: false) { (_: SpoolEntry) async throws in }
    }
    var rest: [String] = []
    try await spool.drain { (entry: SpoolEntry) async throws in rest.append(entry.id) }
    #expect(rest.isEmpty || rest == ["later"])
    #expect(try spool.pendingCount() == 0)
  }

  @Test func stopsAfterMaxEntries() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    for index in 0..<5 { try spool.enqueue(payload: [UInt8(index)], id: "i\(index)") }
    var ids: [String] = []
    try spool.drain(maxEntries: 2) { ids.append($0.id) }
    #expect(ids == ["i0", "i1"])
    #expect(try spool.pendingCount() == 3)
  }

  @Test func refusesASecondDrainWhenAskedNotToWait() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let other = try Spool(container: temporary.container())
    try spool.enqueue(payload: [1], id: "x")
    try spool.drain { _ in
      let error = #expect(throws: ContainerError.self) {
        try other.drain(waitForOtherConsumers: false) { _ in }
      }
      #expect(error?.code == .busy)
    }
  }

  @Test func setsAsideCorruptEntriesAndDeliversTheOthers() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    for id in ["a", "flipped", "b", "truncated", "c", "missing", "d", "stray", "e"] {
      try spool.enqueue(
        payload: Array(repeating: 1, count: 100), attachments: [.data(Data([1, 2]), name: "x")],
        id: id)
    }
    let new = spool.path + "/new/"
    func entry(_ id: String) throws -> String {
      try #require(
        try FileManager.default.contentsOfDirectory(atPath: new).first { $0.hasSuffix("." + id) })
    }
    let flipped = try new + entry("flipped") + "/entry"
    var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: flipped)))
    bytes[60] ^= 0x40
    try Data(bytes).write(to: URL(fileURLWithPath: flipped))
    #expect(truncate(try new + entry("truncated") + "/entry", 50) == 0)
    #expect(unlink(try new + entry("missing") + "/x") == 0)
    #expect(
      FileManager.default.createFile(atPath: try new + entry("stray") + "/extra", contents: nil))
    #expect(mkdir(new + "garbage-name", 0o700) == 0)
    try writeLegacyEntry(
      spool, id: "single", time: Spool.nextEnqueueTime(),
      payload: [UInt8](repeating: 2, count: 100))
    let single = try new + entry("single")
    var singleBytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: single)))
    singleBytes[70] ^= 0x01
    try Data(singleBytes).write(to: URL(fileURLWithPath: single))
    try spool.enqueue(payload: [UInt8](repeating: 3, count: 100), id: "f")

    let result = try drainAll(spool)
    #expect(result.ids == ["a", "b", "c", "d", "e", "f"])
    #expect(result.summary.setAside.count == 6)
    for error in result.summary.setAside {
      #expect(error.code == .corruptFile)
      #expect(error.path.contains("/corrupt/"))
    }
    let reasons = result.summary.setAside.map(\.message).joined(separator: "\n")
    #expect(reasons.contains("checksum"))
    #expect(reasons.contains("'extra'"))
    let corrupt = try FileManager.default.contentsOfDirectory(atPath: spool.path + "/corrupt")
    #expect(corrupt.count == 6)
    #expect(try spool.pendingCount() == 0)
  }

  @Test func neverFollowsASymlinkPlantedInTheSpool() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let outside = temporary.path + "/outside"
    #expect(mkdir(outside, 0o700) == 0)
    #expect(FileManager.default.createFile(atPath: outside + "/entry", contents: Data([1])))
    #expect(symlink(outside, spool.path + "/new/0000000000000001.1.evil") == 0)
    try spool.enqueue(payload: [1], id: "good")
    let result = try drainAll(spool)
    #expect(result.ids == ["good"])
    #expect(result.summary.setAside.count == 1)
    #expect(FileManager.default.fileExists(atPath: outside + "/entry"))
  }

  @Test(arguments: ["../x", "a/b", ".hidden", "", String(repeating: "a", count: 129), "a b"])
  func refusesUnsafeEntryIds(_ id: String) throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let error = #expect(throws: ContainerError.self) { try spool.enqueue(payload: [1], id: id) }
    #expect(error?.code == .invalidName)
  }

  @Test(arguments: ["../escape", "a/b", ".hidden", "entry", ""])
  func refusesUnsafeAttachmentNames(_ name: String) throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let error = #expect(throws: ContainerError.self) {
      try spool.enqueue(payload: [1], attachments: [.data(Data([1]), name: name)])
    }
    #expect(error?.code == .invalidName)
    #expect(try spool.pendingCount() == 0)
    #expect(!FileManager.default.fileExists(atPath: temporary.path + "/escape"))
  }

  @Test func enforcesQuotas() throws {
    let temporary = TemporaryDirectory()
    let byCount = try Spool(
      container: temporary.container(), name: "count", limits: SpoolLimits(maximumEntries: 2))
    try byCount.enqueue(payload: [1])
    try byCount.enqueue(payload: [2])
    let full = #expect(throws: ContainerError.self) { try byCount.enqueue(payload: [3]) }
    #expect(full?.code == .quotaExceeded)
    #expect(full?.message.contains("maximumEntries") == true)

    let byBytes = try Spool(
      container: temporary.container(), name: "bytes", limits: SpoolLimits(maximumBytes: 1000))
    try byBytes.enqueue(payload: [UInt8](repeating: 0, count: 500))
    let large = #expect(throws: ContainerError.self) {
      try byBytes.enqueue(payload: [UInt8](repeating: 0, count: 500))
    }
    #expect(large?.code == .quotaExceeded)
    #expect(try byBytes.pendingCount() == 1)
    #expect(try FileManager.default.contentsOfDirectory(atPath: byBytes.path + "/tmp").isEmpty)
  }

  /// An entry that a quota listing saw while it was being flushed is counted once.
  ///
  /// A listing taken while an entry of this process is readable but not yet flushed counts
  /// it; its commit does not count it again (`Protocol/container.md` §4.8). Each listing is made due inside `whenVisible`, between the entry becoming readable and its
  /// flush, as another thread's enqueue 100 ms after the last listing would.
  @Test(arguments: [false, true])
  func anEntryListedWhileItIsFlushedIsCountedOnce(withAttachment: Bool) throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(
      container: temporary.container(), limits: SpoolLimits(maximumEntries: 6))
    let attachments: [SpoolAttachment] =
      withAttachment ? [.data(Data([1]), name: "a.bin")] : []
    try spool.enqueue(payload: [0], attachments: attachments)
    var nested: [ContainerError] = []
    for index in 1...2 {
      try spool.enqueue(payload: [UInt8(index)], attachments: attachments) {
        spool.usageCache.withLock { $0 = nil }
        do throws(ContainerError) {
          try spool.enqueue(payload: [UInt8(10 + index)], attachments: attachments)
        } catch {
          nested.append(error)
        }
      }
    }
    #expect(nested.isEmpty, "\(nested)")
    #expect(try spool.pendingCount() == 5)
    // One entry short of the limit: the sixth fits, the seventh does not.
    try spool.enqueue(payload: [6], attachments: attachments)
    let full = #expect(throws: ContainerError.self) {
      try spool.enqueue(payload: [7], attachments: attachments)
    }
    #expect(full?.code == .quotaExceeded)
    #expect(try spool.pendingCount() == 6)
  }

  @Test func removesStaleTemporaryEntriesOnly() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let stale = spool.path + "/tmp/stale"
    let fresh = spool.path + "/tmp/fresh"
    #expect(mkdir(stale, 0o700) == 0)
    #expect(FileManager.default.createFile(atPath: stale + "/entry", contents: Data([1])))
    #expect(mkdir(fresh, 0o700) == 0)
    var times = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
    #expect(utimensat(AT_FDCWD, stale, &times, 0) == 0)
    let summary = try spool.drain { _ in }
    #expect(summary.staleTemporariesRemoved == 1)
    #expect(!FileManager.default.fileExists(atPath: stale))
    #expect(FileManager.default.fileExists(atPath: fresh))
  }

  @Test func usesPrivateModes() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    try spool.enqueue(payload: [1], id: "0-single")
    let segments = try FileManager.default.contentsOfDirectory(atPath: spool.path + "/segments")
    #expect(segments.count == 1)
    for segment in segments { #expect(mode(of: spool.path + "/segments/" + segment) == 0o600) }
    try spool.drain { _ in }
    for file in try FileManager.default.contentsOfDirectory(atPath: spool.path + "/segments") {
      #expect(mode(of: spool.path + "/segments/" + file) == 0o600, "\(file)")
    }
    try spool.enqueue(payload: [1], attachments: [.data(Data([2]), name: "a")], id: "m")
    for directory in ["", "/tmp", "/new", "/cur", "/corrupt", "/segments"] {
      #expect(mode(of: spool.path + directory) == 0o700, "\(directory)")
    }
    let name = try #require(
      try FileManager.default.contentsOfDirectory(atPath: spool.path + "/new").first)
    #expect(mode(of: spool.path + "/new/" + name) == 0o700)
    #expect(mode(of: spool.path + "/new/" + name + "/entry") == 0o600)
    #expect(mode(of: spool.path + "/new/" + name + "/a") == 0o600)
    try spool.drain { _ in }
    #expect(mode(of: spool.path + "/delivered.keys") == 0o600)
    #expect(mode(of: spool.path + "/drain.lock") == 0o600)
  }
}

struct SpoolRandomIDTests {
  @Test func randomIDsAreDistinctVersion4UUIDs() throws {
    let ids = (0..<1000).map { _ in Spool.randomID() }
    #expect(Set(ids).count == ids.count)
    for id in ids.prefix(50) {
      let uuid = try #require(UUID(uuidString: id), "\(id) is not a UUID")
      #expect(uuid.uuidString.lowercased() == id)
      let bytes = Array(id.utf8)
      #expect(bytes[14] == UInt8(ascii: "4"))
      #expect("89ab".utf8.contains(bytes[19]))
    }
  }
}
