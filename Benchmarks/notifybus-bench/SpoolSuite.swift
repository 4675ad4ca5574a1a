import AppGroups
import CSQLite
import Dispatch
import Foundation
import Glibc

/// Durable delivery and drain through the AppGroups spool, against SQLite and against the
/// iOS original's pattern (`Protocol/handoff.md` §6), at 1,000 and 10,000 pending items.
///
/// For each depth N the suite fills each store with N pending items, then measures:
/// - **enqueue at N pending**: one producer durably adding items one at a time while N are
///   waiting (items/s);
/// - **drain N**: one consumer taking every pending item, one durable claim per item
///   (items/s).
///
/// Baselines, with the same ~150-byte item:
/// - **SQLite**: a WAL database in the container (`journal_mode=WAL`, `synchronous=FULL`,
///   so a commit is durable), one transaction per enqueued item and one per drained item
///   (select the oldest, hand it over, delete it, commit).
/// - **defaults array**: the iOS original's pattern (read the `pendingItems` array from shared
///   defaults, append, write it back; drain by reading the array and removing the key),
///   run on ``SharedDefaults`` so every write is durable and serialized like the spool's.
enum SpoolSuite: BenchmarkSuite {
  static let name = "spool"

  static func run(scale: Double) async throws -> [BenchmarkRow] {
    var rows: [BenchmarkRow] = []
    // Warm up code paths, page cache and the file system's allocators; discard the figures.
    _ = try measureSpool(pending: 200, measured: 50)
    _ = try measureSQLite(pending: 200, measured: 50)
    for depth in [1000, 10_000] {
      let pending = max(50, Int(Double(depth) * scale))
      let measured = max(20, Int(300 * scale))
      let spool = try measureSpool(pending: pending, measured: measured)
      let sqlite = try measureSQLite(pending: pending, measured: measured)
      let defaults = try measureDefaults(pending: pending, measured: measured)
      let label = pending >= 1000 ? "\(pending / 1000)k" : "\(pending)"
      // The peer, SQLite, is the baseline with the target; the seeds' pattern is the
      // second peer (row names are unique: `--repeat` matches rows by name).
      let second = "defaults array (seeds)"
      rows.append(
        BenchmarkRow(
          name: "spool durable enqueue @\(label) pending", unit: "items/s",
          subject: spool.enqueue, baselineName: "SQLite WAL, txn/item", baseline: sqlite.enqueue,
          higherIsBetter: true, target: 1.0, secondBaselineName: second,
          secondBaseline: defaults.enqueue))
      rows.append(
        BenchmarkRow(
          name: "spool drain \(label) pending", unit: "items/s", subject: spool.drain,
          baselineName: "SQLite WAL, txn/item", baseline: sqlite.drain, higherIsBetter: true,
          target: 1.0, secondBaselineName: second, secondBaseline: defaults.drain))
    }
    return rows + (try drainScaling(scale: scale))
  }

  // MARK: - Drain scaling

  /// Drain time per entry with 100, 1,000, 10,000 and 100,000 pending entries (a tenth with
  /// `--quick`), each against the time per entry of the smallest depth in the same run:
  /// a drain is linear when the cost of an entry does not grow with the entries beside it
  /// (target ≤ 1.5x the smallest depth's cost per entry).
  static func drainScaling(scale: Double) throws -> [BenchmarkRow] {
    let depths = [100, 1000, 10_000, 100_000].map { max(10, Int(Double($0) * scale)) }
    let perEntry = try depths.map { depth in try drainTimePerEntry(pending: depth) }
    return zip(depths, perEntry).dropFirst().map { depth, time in
      BenchmarkRow(
        name: "spool drain time per entry @\(depth) pending", unit: "µs", subject: time,
        baselineName: "the same @\(depths[0]) pending", baseline: perEntry[0],
        higherIsBetter: false, target: 1.5)
    }
  }

  /// Microseconds per entry to drain a spool holding `pending` entries as producers make
  /// them today: records in segment files (`segments/`), each enqueued durably through
  /// `Spool.enqueue` by one of ``fillProducers`` producers (a
  /// `Spool` instance each, as separate share extensions would be, so several segments),
  /// their threads sharing each producer's `fdatasync`s; untimed.
  static func drainTimePerEntry(pending: Int) throws -> Double {
    let (path, container) = try scratch()
    defer { try? FileManager.default.removeItem(atPath: path) }
    try fill(container, pending: pending)
    let spool = try Spool(container: container)
    let segments = try FileManager.default.contentsOfDirectory(atPath: spool.path + "/segments")
    precondition(
      segments.contains { $0.hasSuffix(".seg") },
      "the producers wrote no segment: the row would measure the old layout")
    var drained = 0
    let time = try seconds {
      try spool.drain { entry in drained += entry.payload.isEmpty ? 0 : 1 }
    }
    precondition(drained == pending, "spool drained \(drained) of \(pending)")
    return time * 1e6 / Double(pending)
  }

  /// The producers (`Spool` instances) that fill a spool for the drain rows.
  static var fillProducers: Int { 4 }

  /// Enqueues `pending` entries through the spool's API: ``fillProducers`` producers, each
  /// with 8 threads of its own (real threads, not Dispatch's 2-thread pool, so their
  /// enqueues group their `fdatasync`s).
  static func fill(_ container: GroupContainer, pending: Int) throws {
    // Room beyond `pending`: the deepest row is the default entry limit itself, and the rows
    // measure depth, not the quota (each producer counts its own entries once, but four
    // producers' listings are not atomic with each other: Protocol/container.md §4.8).
    let limits = SpoolLimits(maximumEntries: 2 * pending)
    let producers = try (0..<fillProducers).map { _ in
      try Spool(container: container, limits: limits)
    }
    let threads = 8 * producers.count
    let failures = ConcurrentFailures()
    let done = DispatchGroup()
    for worker in 0..<threads {
      done.enter()
      let producer = producers[worker % producers.count]
      Thread {
        defer { done.leave() }
        for index in stride(from: worker, to: pending, by: threads) {
          do { try producer.enqueue(payload: payload(index), id: "s-\(index)") } catch {
            failures.record(error)
            return
          }
        }
      }.start()
    }
    done.wait()
    try failures.check()
  }

  /// Items per second for enqueueing (at depth) and draining.
  struct Rates {
    var enqueue: Double
    var drain: Double
  }

  /// A share item as the iOS original stores it, encoded as the spool's opaque payload.
  static func item(_ index: Int) -> [String: String] {
    [
      "url": "https://example.com/articles/\(index)?utm_source=share",
      "title": "Shared article number \(index) with a reasonably long title",
      "savedAt": "2026-11-29T14:00:00Z",
    ]
  }

  static func payload(_ index: Int) -> [UInt8] {
    Array(try! JSONSerialization.data(withJSONObject: item(index), options: [.sortedKeys]))
  }

  /// Times `body` after flushing every file system (`sync(2)`), so a phase does not pay
  /// for the writes of the untimed set-up before it.
  static func seconds(_ body: () throws -> Void) rethrows -> Double {
    sync()
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
  }

  static func scratch() throws -> (path: String, container: GroupContainer) {
    let path =
      NSTemporaryDirectory() + "notifybus-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    let container = try GroupContainer(
      identifier: GroupIdentifier(validating: "group.org.notifybus.bench"), groupsDirectory: path)
    return (path, container)
  }

  // MARK: - Spool

  static func measureSpool(pending: Int, measured: Int) throws -> Rates {
    let (path, container) = try scratch()
    defer { try? FileManager.default.removeItem(atPath: path) }
    let spool = try Spool(container: container)
    // Fill with several producers at once (as share extensions would), untimed.
    let failures = ConcurrentFailures()
    DispatchQueue.concurrentPerform(iterations: 8) { worker in
      for index in stride(from: worker, to: pending, by: 8) {
        do { try spool.enqueue(payload: payload(index), id: "fill-\(index)") } catch {
          failures.record(error)
        }
      }
    }
    try failures.check()
    let enqueue = try seconds {
      for index in 0..<measured { try spool.enqueue(payload: payload(index), id: "m-\(index)") }
    }
    var drained = 0
    let drain = try seconds {
      try spool.drain { entry in drained += entry.payload.isEmpty ? 0 : 1 }
    }
    precondition(drained == pending + measured, "spool drained \(drained)")
    return Rates(
      enqueue: Double(measured) / enqueue, drain: Double(pending + measured) / drain)
  }

  // MARK: - SQLite

  static func measureSQLite(pending: Int, measured: Int) throws -> Rates {
    let (path, container) = try scratch()
    defer { try? FileManager.default.removeItem(atPath: path) }
    let database = try SQLiteDatabase(path: container.path + "/queue.sqlite")
    try database.execute("PRAGMA journal_mode=WAL")
    try database.execute("PRAGMA synchronous=FULL")
    try database.execute(
      "CREATE TABLE queue (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE, payload BLOB)")
    let insert = try database.prepare("INSERT INTO queue (id, payload) VALUES (?, ?)")
    try database.execute("BEGIN")
    for index in 0..<pending { try insert.run(id: "fill-\(index)", payload: payload(index)) }
    try database.execute("COMMIT")
    let enqueue = try seconds {
      for index in 0..<measured { try insert.run(id: "m-\(index)", payload: payload(index)) }
    }
    let oldest = try database.prepare("SELECT seq, payload FROM queue ORDER BY seq LIMIT 1")
    let delete = try database.prepare("DELETE FROM queue WHERE seq = ?")
    var drained = 0
    let drain = try seconds {
      while true {
        try database.execute("BEGIN IMMEDIATE")
        guard let (seq, bytes) = try oldest.first() else {
          try database.execute("COMMIT")
          break
        }
        drained += bytes.isEmpty ? 0 : 1
        try delete.run(seq: seq)
        try database.execute("COMMIT")
      }
    }
    precondition(drained == pending + measured, "sqlite drained \(drained)")
    return Rates(
      enqueue: Double(measured) / enqueue, drain: Double(pending + measured) / drain)
  }

  // MARK: - Seeds' pattern

  static func measureDefaults(pending: Int, measured: Int) throws -> Rates {
    let (path, container) = try scratch()
    defer { try? FileManager.default.removeItem(atPath: path) }
    let defaults = try SharedDefaults(container: container)
    func entry(_ index: Int) -> PropertyListValue {
      .dictionary(item(index).mapValues { .string($0) })
    }
    try defaults.set((0..<pending).map(entry), forKey: "pendingItems")
    let enqueue = try seconds {
      for index in 0..<measured {
        var queue = try defaults.array(forKey: "pendingItems") ?? []
        queue.append(entry(index))
        try defaults.set(queue, forKey: "pendingItems")
      }
    }
    var drained = 0
    let drain = try seconds {
      let queue = try defaults.array(forKey: "pendingItems") ?? []
      for case .dictionary(let fields) in queue where fields["url"] != nil { drained += 1 }
      try defaults.removeObject(forKey: "pendingItems")
    }
    precondition(drained == pending + measured, "defaults drained \(drained)")
    return Rates(
      enqueue: Double(measured) / enqueue, drain: Double(pending + measured) / drain)
  }
}

/// Errors raised by concurrent fill workers.
private final class ConcurrentFailures: @unchecked Sendable {
  // Safe: every access holds `lock`.
  private let lock = NSLock()
  private var first: (any Error)?

  func record(_ error: any Error) {
    lock.lock()
    defer { lock.unlock() }
    if first == nil { first = error }
  }

  func check() throws {
    lock.lock()
    defer { lock.unlock() }
    if let first { throw first }
  }
}

/// A minimal SQLite connection for the baseline.
private final class SQLiteDatabase {
  struct Failure: Error, CustomStringConvertible {
    var description: String
  }

  let handle: OpaquePointer

  init(path: String) throws {
    var handle: OpaquePointer?
    let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
    guard sqlite3_open_v2(path, &handle, flags, nil) == SQLITE_OK, let handle else {
      throw Failure(description: "sqlite3_open_v2 failed for \(path)")
    }
    self.handle = handle
  }

  deinit { sqlite3_close_v2(handle) }

  func check(_ code: CInt, _ what: String) throws {
    guard code == SQLITE_OK || code == SQLITE_DONE || code == SQLITE_ROW else {
      throw Failure(description: "\(what): \(String(cString: sqlite3_errmsg(handle)))")
    }
  }

  func execute(_ sql: String) throws {
    try check(sqlite3_exec(handle, sql, nil, nil, nil), sql)
  }

  func prepare(_ sql: String) throws -> Statement {
    var statement: OpaquePointer?
    try check(sqlite3_prepare_v2(handle, sql, -1, &statement, nil), sql)
    return Statement(database: self, handle: statement!)
  }

  final class Statement {
    let database: SQLiteDatabase
    let handle: OpaquePointer

    init(database: SQLiteDatabase, handle: OpaquePointer) {
      self.database = database
      self.handle = handle
    }

    deinit { sqlite3_finalize(handle) }

    func run(id: String, payload: [UInt8]) throws {
      defer { sqlite3_reset(handle) }
      sqlite3_bind_text(handle, 1, id, -1, CSQLite_TRANSIENT())
      _ = payload.withUnsafeBytes {
        sqlite3_bind_blob(handle, 2, $0.baseAddress, CInt($0.count), CSQLite_TRANSIENT())
      }
      try database.check(sqlite3_step(handle), "insert")
    }

    func run(seq: Int64) throws {
      defer { sqlite3_reset(handle) }
      sqlite3_bind_int64(handle, 1, seq)
      try database.check(sqlite3_step(handle), "delete")
    }

    func first() throws -> (Int64, [UInt8])? {
      defer { sqlite3_reset(handle) }
      let code = sqlite3_step(handle)
      try database.check(code, "select")
      guard code == SQLITE_ROW else { return nil }
      let seq = sqlite3_column_int64(handle, 0)
      let count = Int(sqlite3_column_bytes(handle, 1))
      let bytes =
        count == 0
        ? []
        : Array(
          UnsafeRawBufferPointer(start: sqlite3_column_blob(handle, 1), count: count))
      return (seq, bytes)
    }
  }
}
