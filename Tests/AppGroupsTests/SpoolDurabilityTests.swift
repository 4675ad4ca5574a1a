import Dispatch
import Foundation
import Glibc
import Synchronization
import SystemSupport
import TestSupport
import TestTraits
import Testing

@testable import AppGroups

/// The order of a producer's flushes that the crash argument rests on.
///
/// What a machine crash would take away cannot be tested by crashing the machine; what can be
/// tested is the order the argument in `Protocol/container.md` §4.4 rests on. Four threads of
/// one producer process enqueue at once under `strace -f`, and for every enqueue that
/// returned (its id is in the committed log), the trace must show, before the id was logged:
/// the `pwrite` of its record into its segment, then an `fdatasync` of that segment that
/// started after the `pwrite` ended; and for the segment, the `fdatasync` of its zeros in
/// `tmp/`, its `rename` into `segments/`, then an `fsync` of `segments/` that started after
/// the rename.
@Suite(.blocking, .serialized)
struct SpoolDurabilityTests {
  /// A drain woken for each share stored as a record does not wait for a flush of
  /// `delivered.keys`: once 32 ids wait, one is made on a thread of its own, and never more
  /// than 64 ids are written without one.
  ///
  /// A record's cursor may pass it before its id is flushed (`Protocol/container.md` §4.6).
  /// One producer and one consumer in one process, one share at a
  /// time (`appgroups-stress share-loop`, draining on its main thread), traced with
  /// `strace -f`.
  @Test(.timeLimit(.minutes(3)))
  func aDrainPerShareLeavesTheFlushOfDeliveredKeysToAThreadOfItsOwn() throws {
    let strace = "/usr/bin/strace"
    #expect(access(strace, X_OK) == 0, "strace is missing: run Scripts/bootstrap")
    guard access(strace, X_OK) == 0 else { return }
    let temporary = TemporaryDirectory()
    let trace = temporary.path + "/trace"
    var environment = Products.currentEnvironment()
    environment["NOTIFYBUS_GROUPS_DIR"] = temporary.groups
    let shares = 200
    let process = try Subprocess.spawn(
      strace,
      arguments: [
        "-f", "-qq", "-y", "-o", trace, "-e", "trace=fdatasync,fsync,pwrite64",
        Products.path("appgroups-stress"), "share-loop", "group.com.example.tests",
        String(shares), "1",
      ],
      environment: environment, captureOutput: false)
    #expect(process.wait(milliseconds: 150_000).map { $0 == .exited(0) } ?? false)
    let events = try StraceEvents(readFile(trace) ?? "")
    let records = events.dataSyncs.filter { $0.key.hasSuffix(".seg") }.values.map(\.count)
    #expect(records.reduce(0, +) >= shares, "every enqueue flushes its record")
    #expect(events.keyWrites.count >= shares)
    let drainer = events.keyWrites.first?.thread
    let inDrain = events.keySyncs.filter { $0.thread == drainer }.count
    let aside = events.keySyncs.count - inDrain
    // One flush per 32 ids beside the drain (fewer when one is still running as the next
    // 32 are written), the log's creation among them; in the drain only when 64 ids would
    // wait, which a flush lagging 32 shares (each with its own fdatasync) behind makes.
    #expect(inDrain <= shares / 64, "\(inDrain) flushes in the drain")
    #expect(aside >= 1 && aside <= shares / 32, "\(aside) flushes beside the drain")
    // The log's name is flushed by the first flush that covers its ids, beside the drain.
    let firstKeySync = events.keySyncs.first
    #expect(
      events.directorySyncs.contains {
        $0.path.hasSuffix("/spool/default") && $0.thread == firstKeySync?.thread
          && $0.thread != drainer && $0.interval.start > firstKeySync?.interval.end ?? Int.max
      }, "delivered.keys was created without flushing its name beside the drain")
    // A cursor is created and moved without a flush (`Protocol/container.md` §4.9); the
    // producer's fsync of segments/ when it made its segment is the only one.
    #expect(events.dataSyncs.keys.filter { $0.hasSuffix(".pos") }.isEmpty)
    #expect(events.directorySyncs.filter { $0.path.hasSuffix("/segments") }.count == 1)
    #expect(
      events.mostUnflushedKeys <= Spool.settleBatch,
      "\(events.mostUnflushedKeys) ids written to delivered.keys without a flush")
  }

  /// Once 32 ids wait, the drain flushes `delivered.keys` on a thread of its own, and the
  /// ids written before that flush started count as flushed when it ends.
  @Test func halfTheIdsABatchAllowsAreFlushedBesideTheDrain() throws {
    let temporary = TemporaryDirectory()
    let producer = try Spool(container: temporary.container())
    let consumer = try Spool(container: temporary.container())
    // The first id creates the log, without a flush like the ids after it.
    for index in 0..<(Spool.settleBatch / 2 - 1) {
      try producer.enqueue(payload: [1], id: "share-\(index)")
      try consumer.drain { _ in }
    }
    consumer.deliveredFlush.wait()
    #expect(consumer.delivered.withLock { $0.unflushedKeys } == Spool.settleBatch / 2 - 1)
    try producer.enqueue(payload: [1], id: "share-last")
    try consumer.drain { _ in }
    consumer.deliveredFlush.wait()
    #expect(consumer.delivered.withLock { $0.unflushedKeys } == 0)
  }

  /// After a flush beside the drain failed, every later flush of `delivered.keys` fails too.
  ///
  /// The failure is injected with the test seam of ``BackgroundFlush`` (on a disk: EIO, or
  /// ENOSPC on a thin volume). Linux reports a writeback error once per open file
  /// description, so a later `fdatasync` that returns 0 proves nothing, and a file handed
  /// over is not removed on its strength. A new instance starts clean.
  @Test func aFailedFlushBesideTheDrainFailsEveryLaterFlushOfDeliveredKeys() throws {
    let temporary = TemporaryDirectory()
    let producer = try Spool(container: temporary.container())
    let consumer = try Spool(container: temporary.container())
    let injected = ContainerError.syscall(
      "fdatasync", errno: EIO, path: consumer.path + "/delivered.keys", doing: "flush")
    consumer.deliveredFlush.fault.withLock { $0 = { () throws(ContainerError) in throw injected } }
    try producer.enqueue(payload: [0], id: "first")
    try consumer.drain { _ in }  // Creates (and flushes) the log, in the drain.
    // The 32nd id starts the flush beside the drain, which fails; the failure is reported
    // by the drain that started it or by the next one.
    var reported: [ContainerError] = []
    var handed: [String] = []
    for index in 0..<(Spool.settleBatch / 2) {
      try producer.enqueue(payload: [1], id: "share-\(index)")
    }
    do { try consumer.drain { handed.append($0.id) } } catch let error as ContainerError {
      reported.append(error)
    }
    consumer.deliveredFlush.wait()
    try producer.enqueue(payload: [2], id: "after")
    do { try consumer.drain { handed.append($0.id) } } catch let error as ContainerError {
      reported.append(error)
    }
    // Once poisoned, a flush started beside the next drain fails at once, and may be
    // reported too.
    #expect(reported.first?.message == injected.message)
    #expect(reported.dropFirst().allSatisfy { $0.message.contains("may not be on disk") })
    // The disk answers again (no more injected failures), but the log stays poisoned.
    consumer.deliveredFlush.fault.withLock { $0 = nil }
    try producer.enqueue(payload: [3], attachments: [.data(Data([1]), name: "x")], id: "file")
    // Every drain fails now: a flush beside the last one may have failed since, and the one
    // that hands the file over cannot flush before it removes the file.
    consumer.deliveredFlush.wait()
    var failures: [ContainerError] = []
    for _ in 0..<3 where !handed.contains("file") {
      do {
        try consumer.drain { handed.append($0.id) }
        Issue.record("a drain of a poisoned delivered.keys succeeded")
      } catch let error as ContainerError {
        failures.append(error)
      }
    }
    #expect(handed.filter { $0 == "file" }.count == 1)
    #expect(!failures.isEmpty)
    #expect(
      failures.allSatisfy { $0.message.contains("may not be on disk") },
      "\(failures.map(\.message))")
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: consumer.path + "/cur").count == 1,
      "the file handed over is not removed without a flush")
    // Opened again, the spool removes it without handing it over again; every entry was
    // handed over once.
    let reopened = try Spool(container: temporary.container())
    let summary = try reopened.drain { handed.append($0.id) }
    #expect(summary.delivered == 0 && summary.duplicates >= 1)
    let expected = (0..<(Spool.settleBatch / 2)).map { "share-\($0)" } + ["after", "file"]
    #expect(handed.sorted() == expected.sorted())
    #expect(try FileManager.default.contentsOfDirectory(atPath: consumer.path + "/cur").isEmpty)
  }

  /// A consumer that reads a `delivered.keys` another created `fsync`s the spool's
  /// directory with its first flush before any id counts as flushed
  /// (`Protocol/container.md` §5): the creator creates it without a flush and may exit
  /// before the flush that covers its name (here: dropped with 3 ids waiting).
  @Test func aConsumerFlushesTheNameOfADeliveredKeysAnotherCreatedWithItsFirstFlush() throws {
    let temporary = TemporaryDirectory()
    let container = try temporary.container()
    let producer = try Spool(container: container)
    for index in 0..<3 { try producer.enqueue(payload: [0], id: "first-\(index)") }
    do {
      let first = try Spool(container: container)
      #expect(try first.drain { _ in }.delivered == 3)
      #expect(first.delivered.withLock { $0.unflushedKeys == 3 && $0.nameMayBeUnflushed })
    }
    let second = try Spool(container: container)
    let directorySyncs = Mutex(0)
    second.deliveredFlush.directoryFault.withLock {
      $0 = { () throws(ContainerError) in directorySyncs.withLock { $0 += 1 } }
    }
    try producer.enqueue(payload: [1], id: "second-0")
    #expect(try second.drain { _ in }.delivered == 1)
    #expect(second.delivered.withLock { $0.unflushedKeys == 4 && $0.nameMayBeUnflushed })
    // The 32nd id waiting starts the flush beside the drain: file, then directory.
    let rest = Spool.settleBatch / 2 - 4
    for index in 1...rest { try producer.enqueue(payload: [1], id: "second-\(index)") }
    #expect(try second.drain { _ in }.delivered == rest)
    second.deliveredFlush.wait()
    #expect(directorySyncs.withLock { $0 } == 1)
    #expect(second.delivered.withLock { $0.unflushedKeys == 0 && !$0.nameMayBeUnflushed })
  }

  /// A failed `fsync` of the directory in the drain's own flush of `delivered.keys` poisons
  /// the log like a failed `fdatasync`: the directory's descriptor reports the error once,
  /// so a retry's 0 proves nothing, and the file handed over is not removed on its strength.
  @Test func aFailedDirectoryFlushOfDeliveredKeysFailsEveryLaterFlush() throws {
    let temporary = TemporaryDirectory()
    let producer = try Spool(container: temporary.container())
    let consumer = try Spool(container: temporary.container())
    let injected = ContainerError.syscall(
      "fsync", errno: EIO, path: consumer.path, doing: "flush the directory")
    consumer.delivered.withLock {
      $0.directoryFault = { () throws(ContainerError) in throw injected }
    }
    // A file entry: the drain flushes the log (and the name of the log it creates) before
    // it removes the file.
    try producer.enqueue(payload: [0], attachments: [.data(Data([1]), name: "x")], id: "file")
    var handed: [String] = []
    let first = #expect(throws: ContainerError.self) {
      try consumer.drain { handed.append($0.id) }
    }
    #expect(first?.message == injected.message)
    // The disk answers again, but the next file handed over is not removed either.
    consumer.delivered.withLock { $0.directoryFault = nil }
    try producer.enqueue(payload: [1], attachments: [.data(Data([2]), name: "y")], id: "next")
    let later = #expect(throws: ContainerError.self) {
      try consumer.drain { handed.append($0.id) }
    }
    #expect(later?.message.contains("may not be on disk") ?? false, "\(later?.message ?? "")")
    #expect(handed == ["file", "next"])
    #expect(try FileManager.default.contentsOfDirectory(atPath: consumer.path + "/cur").count == 1)
  }

  /// A drain that removes files waits for a flush beside the drain that is running, and
  /// throws its failure instead of removing them.
  @Test(.timeLimit(.minutes(1)))
  func aDrainRemovesNoFileWhileAFlushBesideItMayFail() throws {
    let temporary = TemporaryDirectory()
    let producer = try Spool(container: temporary.container())
    let consumer = try Spool(container: temporary.container())
    let injected = ContainerError.syscall(
      "fdatasync", errno: EIO, path: consumer.path + "/delivered.keys", doing: "flush")
    let release = DispatchSemaphore(value: 0)
    consumer.deliveredFlush.fault.withLock {
      $0 = { () throws(ContainerError) in
        release.wait()
        throw injected
      }
    }
    try producer.enqueue(payload: [0], id: "first")
    try consumer.drain { _ in }  // Creates (and flushes) the log, in the drain.
    for index in 0..<(Spool.settleBatch / 2) {
      try producer.enqueue(payload: [1], id: "share-\(index)")
    }
    try consumer.drain { _ in }  // Its 32nd id starts the flush beside it, held by `fault`.
    try producer.enqueue(payload: [2], attachments: [.data(Data([1]), name: "x")], id: "file")
    // Released well after the drain below completed its entry: that drain must wait for it.
    Thread.detachNewThread {
      usleep(500_000)
      release.signal()
    }
    var handed: [String] = []
    let error = #expect(throws: ContainerError.self) {
      try consumer.drain { handed.append($0.id) }
    }
    #expect(handed == ["file"])
    #expect(error?.message == injected.message)
    #expect(try FileManager.default.contentsOfDirectory(atPath: consumer.path + "/cur").count == 1)
  }

  /// The bound of `Protocol/container.md` §4.6 (a machine crash hands over again at most the
  /// 64 entries accepted since the last flush of `delivered.keys`) holds across consumer
  /// processes: an app that drains a few shares and exits (an idle timeout) leaves ids
  /// unflushed, and the next one counts them as its own.
  ///
  /// Three consumer processes in turn deliver 40 records each. Traced with `strace`, no more
  /// than 64 ids are written to `delivered.keys` between two of its `fdatasync`s.
  @Test(.timeLimit(.minutes(3)))
  func idsLeftUnflushedByAConsumerThatExitedCountTowardTheNextOnesFlush() throws {
    let strace = "/usr/bin/strace"
    #expect(access(strace, X_OK) == 0, "strace is missing: run Scripts/bootstrap")
    guard access(strace, X_OK) == 0 else { return }
    let temporary = TemporaryDirectory()
    let producer = try Spool(container: temporary.container())
    var environment = Products.currentEnvironment()
    environment["NOTIFYBUS_GROUPS_DIR"] = temporary.groups
    var calls: [String] = []
    for round in 0..<3 {
      for index in 0..<40 { try producer.enqueue(payload: [1], id: "r\(round)-\(index)") }
      let trace = temporary.path + "/trace-\(round)"
      let process = try Subprocess.spawn(
        strace,
        arguments: [
          "-f", "-qq", "-y", "-o", trace, "-e", "trace=pwrite64,fdatasync",
          Products.path("appgroups-stress"), "consume", "group.com.example.tests",
          temporary.path + "/delivered-\(round)", "40",
        ],
        environment: environment, captureOutput: false)
      #expect(process.wait(milliseconds: 120_000).map { $0 == .exited(0) } ?? false)
      // One consumer after another: their traces in turn are one timeline.
      calls += lines(of: trace)
    }
    let events = try StraceEvents(calls.joined(separator: "\n"))
    #expect(events.keyWrites.count == 120)
    let most = events.mostUnflushedKeys
    #expect(most <= Spool.settleBatch, "\(most) ids written to delivered.keys without a flush")
  }

  /// `delivered.keys` forgets its oldest ids only after every cursor that passed them is
  /// durable (`Protocol/container.md` §4.6): a cursor that a machine crash set back would
  /// otherwise hand those records over again, as new.
  ///
  /// Three producers hold a segment each; a first consumer passes records in each, writing
  /// the cursors without flushing them (fewer than half the capacity each); a second consumer
  /// delivers enough to make `delivered.keys` forget. Traced with `strace`, every cursor's
  /// last `pwrite` before the compacted log's `rename` must be followed by an `fdatasync` of
  /// that cursor before it.
  @Test(.timeLimit(.minutes(3)))
  func deliveredIdsAreForgottenOnlyAfterEveryCursorPassingThemIsDurable() throws {
    let strace = "/usr/bin/strace"
    #expect(access(strace, X_OK) == 0, "strace is missing: run Scripts/bootstrap")
    guard access(strace, X_OK) == 0 else { return }
    let temporary = TemporaryDirectory()
    let container = try temporary.container()
    let producers = try (0..<3).map { _ in try Spool(container: container) }
    var environment = Products.currentEnvironment()
    environment["NOTIFYBUS_GROUPS_DIR"] = temporary.groups
    var traces: [String] = []
    func consume(_ expected: Int, round: Int) throws {
      let trace = temporary.path + "/trace-\(round)"
      let process = try Subprocess.spawn(
        strace,
        arguments: [
          "-qq", "-y", "-o", trace, "-e", "trace=pwrite64,fdatasync,rename,renameat,renameat2",
          Products.path("appgroups-stress"), "consume", "group.com.example.tests",
          temporary.path + "/delivered-\(round)", String(expected), "8",
        ],
        environment: environment, captureOutput: false)
      #expect(process.wait(milliseconds: 120_000).map { $0 == .exited(0) } ?? false)
      traces.append(try String(contentsOfFile: trace, encoding: .utf8))
    }
    // Round 1 creates each cursor, round 2 moves each by 2, both without a flush.
    for (index, producer) in producers.enumerated() {
      try producer.enqueue(payload: [1], id: "r1-\(index)")
    }
    try consume(3, round: 1)
    for (index, producer) in producers.enumerated() {
      for record in 0..<2 { try producer.enqueue(payload: [1], id: "r2-\(index)-\(record)") }
    }
    try consume(6, round: 2)
    // Round 3: 17 ids in all, more than twice the capacity of 8: the log forgets.
    for record in 0..<8 { try producers[0].enqueue(payload: [1], id: "r3-\(record)") }
    try consume(8, round: 3)
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: producers[0].path + "/segments")
        .filter { $0.hasSuffix(".pos") }.count == 3)

    let calls = traces.joined(separator: "\n").split(separator: "\n").map(String.init)
    func path(_ call: String) -> String? {
      guard let open = call.firstIndex(of: "<"), let close = call.firstIndex(of: ">") else {
        return nil
      }
      return String(call[call.index(after: open)..<close])
    }
    let compactions = calls.indices.filter {
      calls[$0].hasPrefix("rename") && calls[$0].contains("delivered.keys")
    }
    #expect(!compactions.isEmpty, "delivered.keys was never compacted")
    for compaction in compactions {
      var lastWrite: [String: Int] = [:]
      for index in 0..<compaction where calls[index].hasPrefix("pwrite64(") {
        if let cursor = path(calls[index]), cursor.hasSuffix(".pos") { lastWrite[cursor] = index }
      }
      for (cursor, written) in lastWrite {
        let flushed = (written + 1..<compaction).contains {
          calls[$0].hasPrefix("fdatasync(") && path(calls[$0]) == cursor
            && calls[$0].hasSuffix("= 0")
        }
        #expect(
          flushed,
          "\(cursor): written at call \(written), not flushed before the ids were forgotten")
      }
    }
  }

  /// Also with records large enough to fill three segments, each taken ahead of need on a
  /// thread of its own while the current one fills (`Protocol/container.md` §4.4).
  @Test(.timeLimit(.minutes(3)), arguments: [0, 20 << 10])
  func everyReturnedEnqueueFlushedItsRecordAndItsSegmentsNameBeforeReturning(padding: Int) throws {
    let strace = "/usr/bin/strace"
    #expect(access(strace, X_OK) == 0, "strace is missing: run Scripts/bootstrap")
    guard access(strace, X_OK) == 0 else { return }
    let temporary = TemporaryDirectory()
    let trace = temporary.path + "/trace"
    let committed = temporary.path + "/committed"
    let threads = 4
    let perThread = 40
    var environment = Products.currentEnvironment()
    environment["NOTIFYBUS_GROUPS_DIR"] = temporary.groups
    let process = try Subprocess.spawn(
      strace,
      arguments: [
        "-f", "-qq", "-y", "-s", "64", "-o", trace, "-e",
        "trace=fdatasync,fsync,renameat2,write,pwrite64",
        Products.path("appgroups-stress"), "produce-threads", "group.com.example.tests", "0",
        String(threads), String(perThread), committed, String(padding),
      ],
      environment: environment, captureOutput: false)
    #expect(process.wait(milliseconds: 150_000).map { $0 == .exited(0) } ?? false)

    // Where each record is: the producer's segments are still there (nobody drained).
    let segments = temporary.groups + "/group.com.example.tests/spool/default/segments"
    var records: [String: (segment: String, offset: Int)] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: segments)
    where name.hasSuffix(".seg") {
      let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: segments + "/" + name)))
      for record in SpoolSegmentFormat.scan(bytes, from: SpoolSegmentFormat.headerSize).records {
        records[record.id] = (name, record.offset)
      }
    }
    let ids = lines(of: committed)
    #expect(ids.count == threads * perThread)
    let events = try StraceEvents(String(contentsOfFile: trace, encoding: .utf8))
    var checked = 0
    for id in ids {
      guard let (segment, offset) = records[id] else {
        Issue.record("\(id) is in no segment")
        continue
      }
      guard let written = events.recordWrites["\(segment)@\(offset)"],
        let logged = events.logWrites[id]
      else {
        Issue.record("\(id): no pwrite of its record, or no committed-log write")
        continue
      }
      let flushed = events.dataSyncs[segments + "/" + segment, default: []].contains {
        $0.start > written && $0.end < logged
      }
      #expect(
        flushed, "\(id): no fdatasync of its segment began after its pwrite and ended before return"
      )
      guard let renamed = events.segmentRenames[segment],
        let prepared = events.dataSyncs.first(where: { $0.key.hasSuffix("/tmp/" + segment) })?
          .value,
        prepared.contains(where: { $0.end < renamed })
      else {
        Issue.record("\(id): its segment was not flushed in tmp/ and renamed into segments/")
        continue
      }
      let named = events.segmentsSyncs.contains { $0.start > renamed && $0.end < logged }
      #expect(
        named,
        "\(id): no fsync of segments/ began after its segment's rename and ended before return")
      checked += 1
    }
    #expect(checked == threads * perThread)
    if padding > 0 {
      #expect(Set(records.values.map(\.segment)).count >= 3, "the records filled one segment")
    }
    // One flush per enqueue at most: fewer when threads share one.
    let recordSyncs = events.dataSyncs.filter { $0.key.hasPrefix(segments) }.values.map(\.count)
    #expect(recordSyncs.reduce(0, +) <= ids.count)
  }
}

/// The events of an `strace -f -y` log that the durability test needs, by line number.
///
/// A call another thread interrupted is printed as `… <unfinished ...>` when it starts and
/// `<... name resumed> …` when it ends; a call printed whole started and ended at its line.
private struct StraceEvents {
  struct Interval {
    var start: Int
    var end: Int
  }

  /// `pwrite64` into a segment, by `<segment>@<offset>`: the line it ended.
  var recordWrites: [String: Int] = [:]
  /// `fdatasync` by path.
  var dataSyncs: [String: [Interval]] = [:]
  /// Renames into `segments/`, by name: the line it ended.
  var segmentRenames: [String: Int] = [:]
  var segmentsSyncs: [Interval] = []
  /// `fsync` of a directory that returned 0, and the thread that made it.
  var directorySyncs: [(path: String, thread: String, interval: Interval)] = []
  var logWrites: [String: Int] = [:]
  /// `pwrite64` into `delivered.keys`: the thread and the line it ended.
  var keyWrites: [(thread: String, end: Int)] = []
  /// `fdatasync` of `delivered.keys` that returned 0, and the thread that made it.
  var keySyncs: [(thread: String, interval: Interval)] = []

  /// The most ids written to `delivered.keys` at any moment and not covered by an
  /// `fdatasync` that started after they were written and had ended by then (one id per
  /// `pwrite64`, as a drain writes them).
  var mostUnflushedKeys: Int {
    var most = 0
    for (index, write) in keyWrites.enumerated() {
      // Covered: the writes that ended before the start of a flush that ended by now.
      let covered =
        keySyncs.filter { $0.interval.end <= write.end }.map { sync in
          keyWrites.prefix { $0.end < sync.interval.start }.count
        }.max() ?? 0
      most = max(most, index + 1 - covered)
    }
    return most
  }

  init(_ text: String) throws {
    // Calls started but not yet ended, by thread: (name, first line's text, start line).
    var pending: [String: (call: String, text: String, start: Int)] = [:]
    for (number, line) in text.split(separator: "\n").enumerated() {
      let parts = line.split(separator: " ", maxSplits: 1)
      guard parts.count == 2 else { continue }
      let thread = String(parts[0])
      var body = parts[1].trimmingCharacters(in: .whitespaces)
      var start = number
      if body.hasSuffix("<unfinished ...>") {
        let call = String(body.prefix { $0 != "(" })
        pending[thread] = (call, body, number)
        continue
      }
      if body.hasPrefix("<... "), let begun = pending.removeValue(forKey: thread) {
        let rest = body.drop { $0 != ">" }.dropFirst()
        body =
          begun.text.replacingOccurrences(of: " <unfinished ...>", with: "")
          + rest.trimmingCharacters(in: .whitespaces)
        start = begun.start
      }
      record(body, thread: thread, start: start, end: number)
    }
  }

  private mutating func record(_ call: String, thread: String, start: Int, end: Int) {
    if call.hasPrefix("pwrite64("), let path = Self.path(in: call),
      path.hasSuffix("/delivered.keys")
    {
      keyWrites.append((thread, end))
    }
    if call.hasPrefix("fdatasync("), call.hasSuffix("= 0"), let path = Self.path(in: call) {
      dataSyncs[path, default: []].append(Interval(start: start, end: end))
      if path.hasSuffix("/delivered.keys") {
        keySyncs.append((thread, Interval(start: start, end: end)))
      }
    } else if call.hasPrefix("fsync("), call.hasSuffix("= 0"), let path = Self.path(in: call) {
      directorySyncs.append((path, thread, Interval(start: start, end: end)))
      if path.hasSuffix("/segments") { segmentsSyncs.append(Interval(start: start, end: end)) }
    } else if call.hasPrefix("renameat2("), call.hasSuffix("= 0"), call.contains("/segments>") {
      let quoted = call.split(separator: "\"")
      guard quoted.count >= 4 else { return }
      segmentRenames[String(quoted[3])] = end
    } else if call.hasPrefix("pwrite64("), let path = Self.path(in: call),
      path.hasSuffix(".seg"), let comma = call.lastIndex(of: ","),
      let close = call.lastIndex(of: ")")
    {
      let offset = call[call.index(after: comma)..<close].trimmingCharacters(in: .whitespaces)
      let name = String(path.split(separator: "/").last!)
      recordWrites["\(name)@\(offset)"] = end
    } else if call.hasPrefix("write("), let path = Self.path(in: call), path.hasSuffix("/committed")
    {
      let quoted = call.split(separator: "\"")
      guard quoted.count >= 2 else { return }
      logWrites[quoted[1].replacingOccurrences(of: "\\n", with: "")] = start
    }
  }

  /// The path `-y` prints for the first descriptor argument: `call(3</a/b>, …`.
  private static func path(in call: String) -> String? {
    guard let open = call.firstIndex(of: "<"), let close = call.firstIndex(of: ">") else {
      return nil
    }
    return String(call[call.index(after: open)..<close])
  }
}

/// Group commit: callers that arrive while a sync runs share the next one, and none returns
/// before a sync that started after it arrived has ended.
struct GroupSyncTests {
  @Test(.timeLimit(.minutes(3)))
  func callersShareTheNextSyncAndNeverReturnOnAnEarlierOne() throws {
    let group = GroupSync()
    let clock = Mutex((now: 0, syncs: [(start: Int, end: Int)]()))
    let tick: @Sendable () -> Int = {
      clock.withLock {
        $0.now += 1
        return $0.now
      }
    }
    let threads = 8
    let rounds = 5
    let violations = Mutex(0)
    // Threads of their own: Dispatch would run no more at once than there are cores.
    let done = DispatchGroup()
    for _ in 0..<threads {
      done.enter()
      Thread.detachNewThread {
        defer { done.leave() }
        for _ in 0..<rounds {
          let arrived = tick()
          try? group.sync { () throws(ContainerError) in
            let start = tick()
            usleep(20_000)
            let end = tick()
            clock.withLock { $0.syncs.append((start, end)) }
          }
          let returned = tick()
          let covered = clock.withLock { state in
            state.syncs.contains { $0.start > arrived && $0.end < returned }
          }
          if !covered { violations.withLock { $0 += 1 } }
        }
      }
    }
    done.wait()
    #expect(violations.withLock { $0 } == 0)
    let syncs = clock.withLock { $0.syncs.count }
    #expect(syncs < threads * rounds, "\(syncs) syncs for \(threads * rounds) callers")
    #expect(syncs >= rounds)
  }

  @Test func aFailedSyncFailsTheCallersItServed() {
    let group = GroupSync()
    let failure = ContainerError(code: .busy, path: "/x", message: "flush failed")
    let error = #expect(throws: ContainerError.self) {
      try group.sync { () throws(ContainerError) in throw failure }
    }
    #expect(error?.message == "flush failed")
    #expect(throws: Never.self) { try group.sync { () throws(ContainerError) in } }
  }

  /// After a segment's `fdatasync` failed, every caller waiting and every later one fails.
  ///
  /// Linux reports a writeback error once per open file description, so after one failed
  /// the next returns 0 although the data it covered may be lost.
  @Test(.timeLimit(.minutes(3))) func aFailedSegmentSyncPoisonsEveryLaterCaller() {
    let group = GroupSync(poisonedByFailure: true)
    let failure = ContainerError(code: .busy, path: "/x", message: "flush failed.")
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let waiterReturned = DispatchSemaphore(value: 0)
    let waiterResult = Mutex<ContainerError?>(nil)
    let syncsRun = Mutex(0)
    Thread.detachNewThread {
      try? group.sync { () throws(ContainerError) in
        started.signal()
        release.wait()
        throw failure
      }
    }
    started.wait()
    // A caller whose record the failing sync may or may not cover: it must not succeed on
    // a later sync that returns 0.
    Thread.detachNewThread {
      do throws(ContainerError) {
        try group.sync { () throws(ContainerError) in syncsRun.withLock { $0 += 1 } }
      } catch {
        waiterResult.withLock { $0 = error }
      }
      waiterReturned.signal()
    }
    usleep(50_000)
    release.signal()
    waiterReturned.wait()
    #expect(waiterResult.withLock { $0 }?.message.hasPrefix("flush failed.") == true)
    let later = #expect(throws: ContainerError.self) {
      try group.sync { () throws(ContainerError) in syncsRun.withLock { $0 += 1 } }
    }
    #expect(later?.message.contains("may not be on disk") == true)
    #expect(syncsRun.withLock { $0 } == 0)
  }
}
