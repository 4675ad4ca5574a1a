import Dispatch
import Foundation
import Glibc
import Synchronization
import TestSupport
import TestTraits
import Testing

@testable import AppGroups

/// Segments after a machine crash, damage and hostile names: records a crash left behind a
/// consumer's cursor, records and damage past the reader's first chunks, and files named
/// `*.seg` that are not segments (`Protocol/container.md` §4.4, §4.9).
@Suite(.blocking)
struct SpoolSegmentRecoveryTests {
  static let segments = "/segments/"

  static func entry(_ id: String, time: Int64, payload: [UInt8] = [1]) -> [UInt8] {
    SpoolEntryFormat.encode(enqueueTime: time, id: id, attachments: [], payload: payload)
  }

  func segmentNames(_ spool: Spool) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: spool.path + "/segments")
      .filter { $0.hasSuffix(".seg") }.sorted()
  }

  /// Writes a segment of `bytes` followed by zeros up to `size`.
  func writeSegment(_ spool: Spool, _ bytes: [UInt8], size: Int) -> String {
    let path = spool.path + Self.segments + "0000000000000001.1.1.seg"
    let zeros = [UInt8](repeating: 0, count: max(0, size - bytes.count))
    #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes + zeros)))
    return path
  }

  /// Runs `body` on a thread of its own and waits at most `seconds`: a call that spins or
  /// blocks fails the test instead of hanging the suite (its thread is left behind).
  func bounded<T: Sendable>(seconds: Int = 60, _ body: @escaping @Sendable () throws -> T) -> T? {
    let result = Mutex<T?>(nil)
    let done = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      do {
        let value = try body()
        result.withLock { $0 = value }
      } catch {
        Issue.record(error)
      }
      done.signal()
    }
    guard done.wait(timeout: .now() + .seconds(seconds)) == .success else {
      Issue.record("the call did not return within \(seconds) s")
      return nil
    }
    return result.withLock { $0 }
  }

  /// Drains within ``bounded(seconds:_:)``.
  func boundedDrain(_ spool: Spool) -> (ids: [String], summary: DrainSummary?) {
    let drained = bounded { () throws -> ([String], DrainSummary) in
      var ids: [String] = []
      let summary = try spool.drain { ids.append($0.id) }
      return (ids, summary)
    }
    return (drained?.0 ?? [], drained?.1)
  }

  /// A producer never appends behind a cursor that a crash left ahead of the records.
  ///
  /// A consumer may deliver a record before its `fdatasync` ended (the early doorbell) and
  /// persist its cursor past it; a machine crash then loses the record but not the cursor.
  /// A record appended behind that cursor would never be read.
  @Test func aProducerNeverAppendsBehindACursorACrashLeftAheadOfTheRecords() throws {
    let temporary = TemporaryDirectory()
    let container = try temporary.container()
    do {
      let producer = try Spool(container: container)
      try producer.enqueue(payload: [UInt8](repeating: 9, count: 500), id: "not-durable")
      let consumer = try Spool(container: container)
      #expect(try consumer.drain { _ in }.delivered == 1)
    }
    let probe = try Spool(container: container)
    let name = try segmentNames(probe)[0]
    let cursor = try #require(
      SpoolCursor(
        [UInt8](
          Data(
            contentsOf: URL(
              fileURLWithPath: probe.path + Self.segments
                + Spool.positionName(of: name))))))
    #expect(cursor.offset > Int64(SpoolSegmentFormat.headerSize))
    // The crash: the record's bytes never reached the disk; the cursor did.
    let handle = try #require(FileHandle(forUpdatingAtPath: probe.path + Self.segments + name))
    try handle.seek(toOffset: UInt64(SpoolSegmentFormat.headerSize))
    try handle.write(contentsOf: Data(repeating: 0, count: Int(cursor.offset) - 16))
    try handle.close()
    // After the reboot, a one-shot producer enqueues and exits: its enqueue returned.
    do {
      let producer = try Spool(container: container)
      try producer.enqueue(payload: [1, 2, 3], id: "committed")
    }
    let consumer = try Spool(container: container)
    var seen: [String] = []
    try consumer.drain { seen.append($0.id) }
    #expect(seen == ["committed"])
    #expect(try consumer.pendingCount() == 0)
  }

  /// A damaged record past the reader's first chunks (which grow up to 1 MiB) is passed;
  /// the drain returns, it does not spin.
  @Test(.timeLimit(.minutes(2)), arguments: [2 << 20, (1 << 20) + (4 << 10)])
  func damageInALargeSegmentEndsTheScan(size: Int) throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    var bytes = SpoolSegmentFormat.header()
    bytes += SpoolSegmentFormat.frame(Self.entry("a", time: 1_700_000_000_000_000))
    var damaged = SpoolSegmentFormat.frame(Self.entry("b", time: 1_700_000_000_000_001))
    damaged[20] ^= 1
    bytes += damaged
    bytes += SpoolSegmentFormat.frame(Self.entry("c", time: 1_700_000_000_000_002))
    _ = writeSegment(spool, bytes, size: size)
    let drained = boundedDrain(spool)
    #expect(drained.ids == ["a", "c"])
    #expect(drained.summary?.setAside.count == 1)
    #expect(drained.summary?.setAside.first?.message.contains("damaged bytes") == true)
    #expect(try segmentNames(spool).isEmpty)
  }

  /// A valid record larger than the reader's largest chunk (1 MiB) is read whole, at the
  /// length its frame declares; so are the records after it, and its quota figure.
  @Test(.timeLimit(.minutes(2))) func aRecordLargerThanTheLargestChunkIsRead() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let payload = [UInt8](repeating: 7, count: 3 << 19)
    var bytes = SpoolSegmentFormat.header()
    bytes += SpoolSegmentFormat.frame(Self.entry("small", time: 1_700_000_000_000_000))
    bytes += SpoolSegmentFormat.frame(
      Self.entry("big", time: 1_700_000_000_000_001, payload: payload))
    bytes += SpoolSegmentFormat.frame(Self.entry("after", time: 1_700_000_000_000_002))
    _ = writeSegment(spool, bytes, size: 4 << 20)
    #expect(try spool.pendingCount() == 3)
    let payloads = bounded { () throws -> [String: Int] in
      var payloads: [String: Int] = [:]
      try spool.drain { payloads[$0.id] = $0.payload.count }
      return payloads
    }
    #expect(payloads == ["small": 1, "big": payload.count, "after": 1])
  }

  /// Damage found when a segment is retired, with a valid record far behind it (past the
  /// reader's window): the bytes between are set aside and the record is delivered.
  @Test func aRecordFarBehindDamageIsFound() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    var bytes = SpoolSegmentFormat.header()
    bytes += SpoolSegmentFormat.frame(Self.entry("a", time: 1_700_000_000_000_000))
    bytes += [0xff, 0xff, 0xff, 0xff]  // Not a record header.
    bytes += [UInt8](repeating: 0x55, count: 200 << 10)
    bytes += SpoolSegmentFormat.frame(Self.entry("far", time: 1_700_000_000_000_001))
    _ = writeSegment(spool, bytes, size: 1 << 20)
    var seen: [String] = []
    let summary = try spool.drain { seen.append($0.id) }
    #expect(seen == ["a", "far"])
    #expect(summary.setAside.count == 1)
    #expect(summary.setAside.first?.message.contains("damaged bytes") == true)
    #expect(try segmentNames(spool).isEmpty)
  }

  /// A FIFO named `*.seg` would block an open for reading forever, a directory makes a read
  /// fail: both are set aside, and producers and quota checks skip them.
  @Test(.timeLimit(.minutes(2)), arguments: ["fifo", "directory"])
  func aSegmentNameThatIsNotARegularFileIsSetAside(kind: String) throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let path = spool.path + Self.segments + "0000000000000001.1.1.seg"
    #expect((kind == "fifo" ? mkfifo(path, 0o600) : mkdir(path, 0o700)) == 0)
    let produced = bounded { () throws -> [Int] in
      let before = try spool.pendingCount()
      try spool.enqueue(payload: [1], id: "good")
      return [before, try spool.pendingCount()]
    }
    #expect(produced == [0, 1])
    let drained = boundedDrain(spool)
    #expect(drained.ids == ["good"])
    #expect(drained.summary?.setAside.count == 1)
    #expect(drained.summary?.setAside.first?.message.contains("not a regular file") == true)
    #expect(
      FileManager.default.fileExists(atPath: spool.path + "/corrupt/0000000000000001.1.1.seg"))
  }

  /// A spool holding records "a" and "b" in one segment, whose cursor is a `kind` ("fifo"
  /// or "directory") instead of a file; the segment's name.
  func spoolWhoseCursorIsNotARegularFile(_ kind: String, in temporary: TemporaryDirectory)
    throws -> (spool: Spool, segment: String)
  {
    let container = try temporary.container()
    do {
      let producer = try Spool(container: container)
      for id in ["a", "b"] { try producer.enqueue(payload: [1], id: id) }
    }
    let spool = try Spool(container: container)
    let name = try segmentNames(spool)[0]
    let position = spool.path + Self.segments + Spool.positionName(of: name)
    #expect((kind == "fifo" ? mkfifo(position, 0o600) : mkdir(position, 0o700)) == 0)
    return (spool, name)
  }

  /// A segment's cursor (`<segment>.pos`) that is a FIFO or a directory is set aside.
  ///
  /// A FIFO opened without blocking fails every read with `EAGAIN`. The drain starts at
  /// the segment's first record; a producer does not adopt the segment; the quota counts
  /// every record.
  @Test(.timeLimit(.minutes(2)), arguments: ["fifo", "directory"])
  func aCursorThatIsNotARegularFileIsSetAside(kind: String) throws {
    let temporary = TemporaryDirectory()
    let (spool, name) = try spoolWhoseCursorIsNotARegularFile(kind, in: temporary)
    let produced = bounded { () throws -> [Int] in
      let before = try spool.pendingCount()
      try spool.enqueue(payload: [1], id: "c")
      return [before, try spool.pendingCount()]
    }
    #expect(produced == [2, 3])
    // Not adopted: "c" went to a segment of its own.
    #expect(try segmentNames(spool).count == 2)
    let drained = boundedDrain(spool)
    #expect(drained.ids == ["a", "b", "c"])
    #expect(drained.summary?.setAside.count == 1)
    #expect(drained.summary?.setAside.first?.message.contains("cursor is not a regular") == true)
    #expect(
      FileManager.default.fileExists(
        atPath: spool.path + "/corrupt/" + Spool.positionName(of: name)))
  }

  /// A cursor that is not a regular file and cannot be set aside either (here `corrupt/`
  /// is gone) leaves its valid segment to be read from its first record: its records are
  /// delivered, not sent to `corrupt/`, and later drains do not fail.
  @Test(.timeLimit(.minutes(2)), arguments: ["fifo", "directory"])
  func aCursorThatCannotBeSetAsideLeavesItsSegmentReadFromTheFirstRecord(kind: String) throws {
    let temporary = TemporaryDirectory()
    let (spool, name) = try spoolWhoseCursorIsNotARegularFile(kind, in: temporary)
    // The spool keeps `corrupt/` open: moving anything into it now fails (`ENOENT`).
    #expect(rmdir(spool.path + "/corrupt") == 0)
    let drained = boundedDrain(spool)
    #expect(drained.ids == ["a", "b"])
    let messages = drained.summary?.setAside.map(\.message) ?? []
    #expect(messages.first?.contains("cursor is not a regular") == true, "\(messages)")
    #expect(messages.allSatisfy { $0.contains("failed") }, "\(messages)")
    #expect(!messages.contains { $0.contains("'\(name)' in") }, "the segment was set aside")
    let again = boundedDrain(spool)
    #expect(again.summary?.delivered == 0)
    #expect(again.ids.isEmpty)
  }

  /// Too large to be one a producer made: not adopted (it would be read under the writer's
  /// lock), yet drained.
  @Test func aSegmentLargerThanAProducerMakesIsNotAdopted() throws {
    let temporary = TemporaryDirectory()
    let container = try temporary.container()
    let spool = try Spool(container: container)
    var bytes = SpoolSegmentFormat.header()
    bytes += SpoolSegmentFormat.frame(Self.entry("old", time: 1_700_000_000_000_000))
    _ = writeSegment(spool, bytes, size: 3 << 20)
    try Spool(container: container).enqueue(payload: [1], id: "new")
    #expect(try segmentNames(spool).count == 2)
    var seen: [String] = []
    try spool.drain { seen.append($0.id) }
    #expect(seen == ["old", "new"])
  }

  /// A child made by `fork` without `exec` inherits the parent's segment, its lock and its
  /// append offset: it appends to a segment of its own, not over the parent's next record.
  @Test(.timeLimit(.minutes(3))) func aForkedChildDoesNotAppendOverItsParent() throws {
    let temporary = TemporaryDirectory()
    let child = try Child(["produce-forked", "group.com.example.tests"], groups: temporary.groups)
    #expect(child.wait(seconds: 50) == 0)
    let spool = try Spool(container: temporary.container())
    #expect(try segmentNames(spool).count == 2)
    var seen: [String: [UInt8]] = [:]
    let summary = try spool.drain { seen[$0.id] = $0.payload }
    #expect(seen == ["before": [1, 1, 1], "child": [2, 2, 2], "parent": [3, 3, 3]])
    #expect(summary.setAside.isEmpty)
  }
}
