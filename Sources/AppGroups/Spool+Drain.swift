import Dispatch
import Foundation
import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

extension Spool {
  /// Hands every pending entry to `handler`, one at a time, removing each after the
  /// handler returns.
  ///
  /// Order: entries left claimed by a consumer that died, and entries in `new/`, merged by
  /// enqueue time and then id. Entries enqueued while the drain runs are included.
  /// Before the first entry, temporary entries older than
  /// ``SpoolLimits/staleTemporaryAge`` are removed (by this instance's first drain, then at
  /// most once a minute).
  ///
  /// When the handler throws, the drain stops and rethrows; the entry stays claimed and
  /// the next drain hands it over again.
  ///
  /// - Parameters:
  ///   - maxEntries: Stop after delivering this many; `nil` drains until the spool is empty.
  ///   - waitForOtherConsumers: When another drain of this spool is running, wait for it
  ///     (`true`) or throw ``ContainerError/Code/busy`` (`false`).
  ///   - handler: The application's handler. Attachment files exist only while it runs.
  /// - Returns: What the drain did, including the corrupt entries it set aside.
  /// - Throws: The handler's error, or a ``ContainerError``.
  @discardableResult
  public func drain(
    maxEntries: Int? = nil, waitForOtherConsumers: Bool = true,
    _ handler: (SpoolEntry) throws -> Void
  ) throws -> DrainSummary {
    var session = try beginDrain(wait: waitForOtherConsumers)
    do {
      while maxEntries.map({ session.summary.delivered < $0 }) ?? true,
        case .entry(let claim) = try nextClaim(&session, quick: false)
      {
        try handler(claim.entry)
        try complete(claim, in: &session)
      }
    } catch {
      // What the handler accepted before it failed is recorded and removed all the same.
      try? settle(&session)
      throw error
    }
    try settle(&session)
    return session.summary
  }

  /// Hands every pending entry to an asynchronous `handler`; otherwise the same as the
  /// synchronous ``drain(maxEntries:waitForOtherConsumers:_:)``.
  ///
  /// File-system work that can wait runs on a Dispatch thread, never on the Swift
  /// concurrency pool: waiting for another consumer's drain lock, flushing
  /// `delivered.keys`, compacting it, removing and validating files (reading attachments),
  /// sweeping `tmp/`, flushing a cursor, removing a finished segment (and searching it
  /// first), setting anything aside, and the first drain of this instance, or one that finds
  /// `delivered.keys` replaced by another consumer (it reads the log whole). A step that only
  /// lists the spool's directories, takes the free drain lock without waiting, reads a
  /// segment's records and writes ids and cursors without a flush, creating their files when
  /// missing (all served by the page cache), runs on the caller's executor, so a drain woken
  /// for one share stored as a record reaches the handler without a thread switch.
  ///
  /// - Parameters:
  ///   - maxEntries: Stop after delivering this many; `nil` drains until the spool is empty.
  ///   - waitForOtherConsumers: Wait for another running drain, or throw `busy`.
  ///   - handler: The application's handler. Attachment files exist only while it runs.
  /// - Returns: What the drain did.
  /// - Throws: The handler's error, or a ``ContainerError``.
  @discardableResult
  public func drain(
    maxEntries: Int? = nil, waitForOtherConsumers: Bool = true,
    _ handler: (SpoolEntry) async throws -> Void
  ) async throws -> DrainSummary {
    let limit = maxEntries
    let wanted = limit.map { $0 > 0 } ?? true
    // At most one hop to a Dispatch thread per entry, none when the step is quick:
    // completing an entry and claiming the next are one step, and so are beginning the
    // drain and claiming the first.
    let session: DrainSession
    var next: NextClaim
    if let quick = try beginQuickly(wait: waitForOtherConsumers) {
      session = quick
      var state = quick
      next = wanted ? try nextClaim(&state, quick: true) : .end
    } else {
      (session, next) = try await runBlocking { () throws(ContainerError) in
        var session = try self.beginDrain(wait: waitForOtherConsumers)
        return (session, wanted ? try self.nextClaim(&session, quick: false) : .end)
      }
    }
    defer { session.end() }
    do {
      while true {
        if case .slow = next {
          next = try await runBlocking { () throws(ContainerError) in
            var state = session
            return try self.nextClaim(&state, quick: false)
          }
        }
        guard case .entry(let current) = next else { break }
        try await handler(current.entry)
        var state = session
        if completesQuickly(current) {
          try complete(current, in: &state)
          if limit.map({ state.summary.delivered < $0 }) ?? true {
            next = try nextClaim(&state, quick: true)
          } else {
            if settleFlushes(state) {
              try await runBlocking { () throws(ContainerError) in
                var state = session
                try self.settle(&state)
              }
            } else {
              try settle(&state)
            }
            next = .end
          }
        } else {
          next = try await runBlocking { () throws(ContainerError) in
            var state = session
            return try self.finish(current, in: &state, limit: limit)
          }
        }
      }
    } catch {
      // What the handler accepted before it failed is recorded and removed all the same.
      try? await runBlocking { () throws(ContainerError) in
        var current = session
        try self.settle(&current)
      }
      throw error
    }
    return session.summary
  }

  /// Removes temporary entries older than ``SpoolLimits/staleTemporaryAge``.
  ///
  /// A drain does this by itself; call it to clean up a spool nobody drains.
  ///
  /// - Returns: The number of temporary entries removed.
  /// - Throws: ``ContainerError`` when `tmp/` cannot be listed or cleaned.
  @discardableResult
  public func removeStaleTemporaries() throws(ContainerError) -> Int {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let age = limits.staleTemporaryAge.components
    let threshold = Int64(now.tv_sec) - age.seconds
    var removed = 0
    for name in try temporary.entries() {
      guard let info = try temporary.status(of: name) else { continue }
      guard Int64(info.st_mtim.tv_sec) < threshold else { continue }
      if info.st_mode & S_IFMT == S_IFDIR {
        try temporary.removeTree(name)
      } else {
        try temporary.remove(name)
      }
      removed += 1
    }
    return removed
  }
}

/// The state of one drain: the lock, the work list and the summary.
///
/// A class so that an asynchronous drain can hand it to a Dispatch thread for each step.
final class DrainSession: @unchecked Sendable {
  // Safety of @unchecked Sendable: one drain uses its session from one step at a time;
  // the steps run one after another (each awaited before the next starts).
  /// `drain.lock`, locked; unlocked and handed to the spool's next drain at the end.
  private var lock: FileDescriptor?
  var summary = DrainSummary()
  /// Where an entry is: a file (or directory) in `new/` or `cur/`, or a segment's record.
  enum Source: Sendable {
    case incoming
    case claimed
    case record(segment: String, index: Int)
  }
  typealias Item = (name: SpoolEntryName?, raw: String, source: Source)
  var queue: [Item] = []
  var attempted: Set<String> = []
  /// The segments this drain has read, by name.
  var segments: [String: SegmentProgress] = [:]
  /// Files handed over whose ids are written to `delivered.keys` but not yet flushed, by
  /// their `cur/` names: removed after the flush (``Spool/settle(_:)``).
  var unsettled: [String] = []

  /// Whether `cur/` was listed: only a consumer holding `drain.lock` adds to it, so one
  /// listing per drain finds everything left there.
  var listedClaimed = false
  /// The segments this drain has read; the first read hands over what earlier drains left.
  var visited: Set<String> = []
  /// A quick listing left out work that can wait (``Spool/refillSegments(_:quick:)``): the
  /// drain goes on with a step that may wait before it ends.
  var deferred = false
  private let spool: Spool

  init(lock: consuming FileDescriptor, spool: Spool, segments: [String: SegmentProgress]) {
    self.lock = .some(lock)
    self.spool = spool
    self.segments = segments
  }

  /// Hands what this drain knows of the segments, and `drain.lock` unlocked, to the spool's
  /// next drain; once.
  ///
  /// The drain calls it before it returns or throws: a step run on a Dispatch thread
  /// (``runBlocking(_:)``) releases the session it captured only after the drain resumed,
  /// and the lock must be free when the drain returns.
  func end() {
    guard !ended else { return }
    ended = true
    let segments = self.segments
    spool.segmentProgress.withLock { $0 = segments }
    lock?.unlock()
    spool.idleDrainLock.withLock { $0 = lock.take() }
  }
  private var ended = false

  deinit { end() }
}

/// An entry claimed, validated and ready for the handler.
struct Claim: Sendable {
  var raw: String
  var source: DrainSession.Source
  var entry: SpoolEntry
}

extension Spool {
  func beginDrain(wait: Bool) throws(ContainerError) -> DrainSession {
    try beginDrain(wait: wait, quick: false)!
  }

  /// Begins a drain: takes `drain.lock`, brings `delivered.keys` up to date and sweeps
  /// `tmp/` when that is due.
  ///
  /// - Parameter quick: Return `nil` (`drain.lock` unlocked again) instead of bringing
  ///   `delivered.keys` up to date when that would flush or read it whole
  ///   (``KeyLog/refresh(repair:quick:)``).
  private func beginDrain(wait: Bool, quick: Bool) throws(ContainerError) -> DrainSession? {
    // The last drain's descriptor when no other drain of this instance holds it: an flock
    // of a descriptor of its own, so drains of one process exclude each other too.
    let lock: FileDescriptor
    if let idle = idleDrainLock.withLock({ $0.take() }) {
      lock = idle
    } else {
      lock = try root.openFile("drain.lock", flags: O_RDWR, create: true)
    }
    guard try lock.lock(exclusive: true, wait: wait) else {
      throw ContainerError(
        code: .busy, path: lock.path,
        message: "Another process is draining the spool '\(name)' (it holds '\(lock.path)').")
    }
    // Dropped unused (quick), the session unlocks the lock and keeps it for the next drain.
    let session = DrainSession(lock: lock, spool: self, segments: try takeSegmentProgress())
    let current = try delivered.withLock { (log) throws(ContainerError) in
      try log.refresh(repair: true, quick: quick)
    }
    guard current else { return nil }
    if staleSweepIsDue() { session.summary.staleTemporariesRemoved = try removeStaleTemporaries() }
    return session
  }

  /// Begins a drain on the caller's thread when that cannot wait: the drain lock is free,
  /// neither a sweep of `tmp/` nor a first read of `delivered.keys` is due, and
  /// `delivered.keys` is the file this instance read last, or it is gone with nothing
  /// written to it unflushed (else bringing it up to date would flush it and read it whole:
  /// another consumer compacted it).
  ///
  /// - Returns: `nil` when the drain must begin on a Dispatch thread.
  /// - Throws: `busy` when another drain holds the lock and `wait` is `false`.
  func beginQuickly(wait: Bool) throws(ContainerError) -> DrainSession? {
    guard !staleSweepWouldBeDue(), delivered.withLock({ $0.isLoaded }) else { return nil }
    do {
      return try beginDrain(wait: false, quick: true)
    } catch  where error.code == .busy && wait {
      return nil
    }
  }

  private func staleSweepInterval() -> UInt64 {
    let age = limits.staleTemporaryAge.components
    let ageNanoseconds = max(0, age.seconds) * 1_000_000_000 + age.attoseconds / 1_000_000_000
    return UInt64(min(60_000_000_000, ageNanoseconds))
  }

  /// Whether ``staleSweepIsDue()`` would sweep now, without taking the turn.
  private func staleSweepWouldBeDue() -> Bool {
    let now = DispatchTime.now().uptimeNanoseconds
    let interval = staleSweepInterval()
    return lastStaleSweep.withLock { last in
      guard let last else { return true }
      return now >= last && now - last >= interval
    }
  }

  /// Whether a drain should sweep `tmp/`: the first drain of this instance, then at most
  /// once a minute (or once per ``SpoolLimits/staleTemporaryAge`` when shorter), so a
  /// drain woken for each share does not list `tmp/` each time.
  private func staleSweepIsDue() -> Bool {
    let now = DispatchTime.now().uptimeNanoseconds
    let interval = staleSweepInterval()
    return lastStaleSweep.withLock { last in
      // `now < last`: another thread swept after this one read the clock.
      if let last, now < last || now - last < interval { return false }
      last = now
      return true
    }
  }

  /// Lists `cur/`, `new/` and the segments again, keeping what this drain has not tried
  /// yet, sorted.
  private func refill(_ session: inout DrainSession, quick: Bool) throws(ContainerError) {
    session.deferred = false
    var items: [DrainSession.Item] = []
    if !session.listedClaimed {
      session.listedClaimed = true
      for raw in try claimedLister.entries() where !session.attempted.contains(raw) {
        items.append((SpoolEntryName(raw), raw, .claimed))
      }
    }
    for raw in try incomingLister.entries() where !session.attempted.contains(raw) {
      items.append((SpoolEntryName(raw), raw, .incoming))
    }
    items += try refillSegments(session, quick: quick)
    items.sort { lhs, rhs in
      switch (lhs.name, rhs.name) {
      case (let left?, let right?): return left < right
      case (nil, .some): return true
      case (.some, nil): return false
      case (nil, nil): return lhs.raw < rhs.raw
      }
    }
    session.queue = items.reversed()
  }

  /// What ``nextClaim(_:quick:)`` found.
  enum NextClaim {
    /// The next entry, claimed, validated and ready for the handler.
    case entry(Claim)
    /// Nothing is left.
    case end
    /// A quick step stopped before work that can wait: go on with a step that may wait.
    case slow
  }

  /// Claims the next valid entry, dropping duplicates and setting aside corrupt ones.
  ///
  /// - Parameter quick: Stop (``NextClaim/slow``) before anything that can wait: a flush or
  ///   compaction of `delivered.keys`, a cursor to flush, a file entry (claimed, validated
  ///   and removed as files), damaged bytes to copy aside, a segment to remove
  ///   (searched first) or set aside, when the listing has nothing else.
  func nextClaim(_ session: inout DrainSession, quick: Bool) throws(ContainerError) -> NextClaim {
    while true {
      if session.queue.isEmpty {
        // The listing is used up: files handed over so far are flushed and removed, and the
        // cursors written, before the next listing (and before an idle spool ends the drain).
        if quick, settleFlushes(session) { return .slow }
        try settle(&session)
        try refill(&session, quick: quick)
        if session.queue.isEmpty { return session.deferred ? .slow : .end }
      }
      if quick, !isQuick(session.queue.last!, in: session) { return .slow }
      let item = session.queue.removeLast()
      if case .record(let segment, let index) = item.source {
        switch try claimRecord(item.raw, segment: segment, index: index, in: session, quick: quick)
        {
        case .entry(let claim): return .entry(claim)
        case .slow:
          session.queue.append(item)  // Claimed again by the step that may wait.
          return .slow
        case .end: continue
        }
      }
      session.attempted.insert(item.raw)
      if case .claimed = item.source {
        session.summary.recovered += 1
      } else {
        do {
          guard try incoming.rename(item.raw, to: claimed, as: item.raw, replace: false) else {
            continue  // Gone: another consumer that did not lock took it.
          }
        } catch  where error.cause?.errno == EEXIST {
          continue  // The same name is already claimed; it is handled from cur/.
        }
      }
      guard let name = item.name else {
        setAside(item.raw, from: claimed, reason: "the name is not an entry name", in: session)
        continue
      }
      let alreadyDelivered = delivered.withLock { $0.contains(name.id) }
      if alreadyDelivered {
        try claimed.removeItem(item.raw)
        session.summary.duplicates += 1
        continue
      }
      do {
        return .entry(
          Claim(raw: item.raw, source: item.source, entry: try validate(item.raw, name: name)))
      } catch let failure as SpoolEntryFormat.Failure {
        setAside(item.raw, from: claimed, reason: failure.reason, in: session)
      } catch let error as ContainerError {
        throw error
      } catch {
        fatalError("unexpected error \(error)")
      }
    }
  }

  /// Whether claiming `item` is quick: a record whose segment is known, not damaged bytes.
  private func isQuick(_ item: DrainSession.Item, in session: DrainSession) -> Bool {
    guard case .record(let segment, let index) = item.source else { return false }
    return session.segments[segment].map { $0.records[index].damage == nil } ?? true
  }

  /// Whether ``settle(_:)`` would flush or compact `delivered.keys`, or flush a cursor, now.
  private func settleFlushes(_ session: DrainSession) -> Bool {
    !session.unsettled.isEmpty
      || delivered.withLock { $0.unflushedKeys >= Self.settleBatch || $0.isOverCapacity }
      || session.segments.values.contains { $0.advanceFlushes(flushEvery: cursorFlushEvery) }
  }

  /// How many records a cursor passes between its flushes: half the ids `delivered.keys`
  /// keeps (`Protocol/container.md` §4.9).
  private var cursorFlushEvery: Int { max(1, limits.deliveredIDCapacity / 2) }

  /// Completes an entry the handler accepted and claims the next (or settles when the limit
  /// is reached).
  func finish(_ claim: Claim, in session: inout DrainSession, limit: Int?) throws(ContainerError)
    -> NextClaim
  {
    try complete(claim, in: &session)
    guard limit.map({ session.summary.delivered < $0 }) ?? true else {
      try settle(&session)
      return .end
    }
    // Settles before it reports the end (nothing left to list).
    return try nextClaim(&session, quick: false)
  }

  /// Whether ``complete(_:in:)`` cannot wait: a record, and no flush due after its id (the
  /// first id creates `delivered.keys` without one: the flush that covers it flushes the
  /// spool's directory too).
  func completesQuickly(_ claim: Claim) -> Bool {
    guard case .record = claim.source else { return false }
    return delivered.withLock { $0.unflushedKeys + 1 < Self.settleBatch && !$0.isOverCapacity }
  }

  /// Claims a segment's record.
  ///
  /// Drops it when its id was delivered, sets it aside when it no longer reads back valid,
  /// else reads it. Records are not moved: the cursor passes them once their ids are
  /// flushed.
  ///
  /// - Parameter quick: Leave a record that no longer reads back valid (its copy to
  ///   `corrupt/` can wait) to a step that may wait: ``NextClaim/slow``.
  /// - Returns: The claim, or ``NextClaim/end`` when there is none (go on with the next
  ///   item).
  private func claimRecord(
    _ raw: String, segment: String, index: Int, in session: DrainSession, quick: Bool
  ) throws(ContainerError) -> NextClaim {
    guard let progress = session.segments[segment] else { return .end }
    let record = progress.records[index]
    if let damage = record.damage {
      setAsideDamage(segment, index: index, reason: damage, of: progress, in: session)
      return .end
    }
    if delivered.withLock({ $0.contains(record.id) }) {
      progress.records[index].done = true
      progress.changed = true
      session.summary.duplicates += 1
      return .end
    }
    do {
      let entry = try readRecord(record, of: progress)
      return .entry(
        Claim(raw: raw, source: .record(segment: segment, index: index), entry: entry))
    } catch let failure as SpoolEntryFormat.Failure {
      if quick { return .slow }
      let copy = "\(segment).\(record.offset)"
      var error = ContainerError(
        code: .corruptFile, path: corrupt.childPath(copy),
        message: "Spool record '\(raw)' in '\(path)' is corrupt (\(failure.reason)); its bytes "
          + "were copied to 'corrupt/' and the other entries were delivered.")
      do {
        let bytes = try progress.file.read(count: record.length, at: record.offset)
        try corrupt.replaceFile(copy, with: bytes)
      } catch let failure {
        error.message += " Copying it failed too: \(failure.message)"
      }
      progress.records[index].done = true
      progress.changed = true
      session.summary.setAside.append(error)
      return .end
    } catch let error as ContainerError {
      throw error
    } catch {
      fatalError("unexpected error \(error)")
    }
  }

  /// Copies damaged bytes a reader resumed past to `corrupt/<segment>.<offset>` and reports
  /// them; the cursor passes them like a finished record.
  private func setAsideDamage(
    _ segment: String, index: Int, reason: String, of progress: SegmentProgress,
    in session: DrainSession
  ) {
    let range = progress.records[index]
    let copy = "\(segment).\(range.offset)"
    var error = ContainerError(
      code: .corruptFile, path: corrupt.childPath(copy),
      message: "Spool segment '\(segment)' in '\(path)' has \(range.length) damaged bytes at "
        + "offset \(range.offset) (\(reason)); they were copied to 'corrupt/' and the records "
        + "after them were delivered.")
    do {
      // A window at a time: the range may be most of a hostile file of any size.
      let end = range.offset + Int64(range.length)
      try corrupt.replaceFile(copy) { (out) throws(ContainerError) in
        var at = range.offset
        while at < end {
          let bytes = try progress.file.read(
            count: Int(min(Int64(SpoolSegmentReader.window), end - at)), at: at)
          guard !bytes.isEmpty else { break }
          try out.writeAll(bytes)
          at += Int64(bytes.count)
        }
      }
    } catch let failure {
      error.message += " Copying them failed: \(failure.message)"
    }
    progress.records[index].done = true
    progress.changed = true
    session.summary.setAside.append(error)
  }

  /// The most ids written to `delivered.keys` before they are flushed: the most entries a
  /// machine crash can make a drain hand over again (`Protocol/container.md` §4.6).
  static var settleBatch: Int { 64 }

  /// Records the id as delivered; a file is removed once the id is flushed, a record's
  /// cursor passes it at once.
  ///
  /// The id is written at once, so a consumer process that is killed from here on never
  /// hands the entry over again. It is flushed on a queue of its own, which the drain does
  /// not wait for, once half of ``settleBatch`` ids are waiting and no file handed over
  /// waits for its removal (ids written while that
  /// flush runs wait for the next), and by ``settle(_:)`` when ``settleBatch`` are waiting
  /// (the flush beside the drain did not end in time) and before files are removed. A
  /// failure of the flush beside the drain is thrown by the drain's next step: here, by the
  /// next completion, or by ``settle(_:)``, which waits for a running one before it flushes.
  /// A record needs no flush before its cursor passes it: a machine crash that loses the id
  /// either keeps the cursor (the record is not read again) or sets it back too (the record
  /// is handed over again, one of at most ``settleBatch``). So a drain woken for one share
  /// stored as a record waits for no flush.
  func complete(_ claim: Claim, in session: inout DrainSession) throws(ContainerError) {
    let waiting = try delivered.withLock { (log) throws(ContainerError) in
      _ = try log.insert([claim.entry.id], flush: false, compacting: false)
      return log.unflushedKeys
    }
    session.summary.delivered += 1
    switch claim.source {
    case .record(let segment, let index):
      session.segments[segment]?.records[index].done = true
      session.segments[segment]?.changed = true
    case .incoming, .claimed:
      session.unsettled.append(claim.raw)
    }
    if let failure = deliveredFlush.takeFailure() { throw failure }
    if waiting >= Self.settleBatch {
      try settle(&session)
    } else if waiting >= Self.settleBatch / 2, session.unsettled.isEmpty {
      // Files wait for a flush in the drain, which removes them after it.
      flushDeliveredInBackground()
    }
  }

  /// Starts an `fdatasync` of `delivered.keys` on a queue of its own, unless one is running:
  /// ids written meanwhile wait for the next (`Protocol/container.md` §4.6).
  private func flushDeliveredInBackground() {
    deliveredFlush.start { () throws(ContainerError) in
      guard
        let flush = try self.delivered.withLock({
          (log) throws(ContainerError) -> KeyLog.DetachedFlush? in
          // The count that asked for this flush may have been read before the last one
          // ended and covered most of it: then the ids waiting wait for the next.
          guard log.unflushedKeys >= Self.settleBatch / 2 else { return nil }
          return try log.detachedFlush()
        })
      else { return }
      let syncedDirectory: Bool
      do throws(ContainerError) {
        try self.deliveredFlush.sync(flush.file)
        // The log was created since the last flush: its name too.
        syncedDirectory = try self.deliveredFlush.sync(directory: flush.directory)
      } catch {
        self.delivered.withLock { $0.flushFailed(error) }
        throw error
      }
      let names = syncedDirectory ? flush.names : nil
      self.delivered.withLock { $0.flushed(through: flush.count, names: names) }
    }
  }

  /// Flushes the ids written since the last flush when files wait for it or
  /// ``settleBatch`` ids are waiting, then removes those files; moves the cursors past the
  /// records delivered.
  ///
  /// Throws the failure of a flush beside the drain that ended, and before it flushes, waits
  /// for one that is running and throws its failure: no file is removed then. After such a
  /// failure every flush of `delivered.keys` fails (``KeyLog/flushFailed(_:)``).
  func settle(_ session: inout DrainSession) throws(ContainerError) {
    let flushDue =
      !session.unsettled.isEmpty || delivered.withLock { $0.unflushedKeys >= Self.settleBatch }
    if flushDue { deliveredFlush.wait() }
    if let failure = deliveredFlush.takeFailure() { throw failure }
    if flushDue {
      try delivered.withLock { (log) throws(ContainerError) in try log.flush() }
      for raw in session.unsettled {
        // Unlinked directly: a single-file entry costs no status call.
        do {
          try claimed.remove(raw)
        } catch  where error.cause?.errno == EISDIR {
          try claimed.removeTree(raw)
        }
      }
      session.unsettled = []
    }
    for (name, progress) in session.segments {
      try progress.advance(name: name, in: segments, flushEvery: cursorFlushEvery)
    }
    if delivered.withLock({ $0.isOverCapacity }) {
      try makeFinishedDurable()
      try delivered.withLock { (log) throws(ContainerError) in try log.compact() }
    }
  }

  /// Makes every cursor and removal durable before `delivered.keys` forgets its oldest ids
  /// (`Protocol/container.md` §4.6): a cursor or removal that a machine crash undid would
  /// otherwise hand over again, as new, entries whose ids the log no longer holds.
  ///
  /// Flushes every cursor file (those of earlier consumers too: their writes may still be
  /// only in the page cache), then `segments/` (removed segments and cursors), `cur/` and
  /// `new/` (removed and claimed entries).
  private func makeFinishedDurable() throws(ContainerError) {
    for name in try segments.entries() where name.hasSuffix(".pos") {
      let segment = String(name.dropLast(".pos".count)) + ".seg"
      do {
        try SpoolSegmentReader.openCursor(of: segment, in: segments, flags: O_RDONLY)?
          .syncData()
      } catch  where error.code == .wrongFileType {
        continue  // Not a cursor: set aside when its segment is read.
      }
    }
    try segments.sync()
    try claimed.sync()
    try incoming.sync()
  }

  func setAside(
    _ raw: String, from source: borrowing Directory, reason: String, in session: DrainSession
  ) {
    var target = raw
    var error = ContainerError(
      code: .corruptFile, path: corrupt.childPath(raw),
      message: "Spool entry '\(raw)' in '\(path)' is corrupt (\(reason)); it was moved to "
        + "'corrupt/' and the other entries were delivered.")
    do {
      var attempt = 0
      while try corrupt.status(of: target) != nil {
        attempt += 1
        target = raw + "~\(attempt)"
      }
      if try source.rename(raw, to: corrupt, as: target, replace: false) {
        error.path = corrupt.childPath(target)
      } else {
        error.message += " Moving it failed too: it, or 'corrupt/', is gone."
      }
    } catch let failure {
      error.message += " Moving it failed too: \(failure.message)"
    }
    session.summary.setAside.append(error)
  }

  /// Reads and checks a claimed entry: the entry file's checksums, the id and time in its
  /// name, and each attachment's presence, size and checksum.
  private func validate(_ raw: String, name: SpoolEntryName) throws -> SpoolEntry {
    typealias Failure = SpoolEntryFormat.Failure
    guard let info = try claimed.status(of: raw) else { throw Failure("it vanished") }
    switch info.st_mode & S_IFMT {
    case S_IFREG:
      let file = try failing("it cannot be opened as a file", on: [.symbolicLink, .notFound]) {
        () throws(ContainerError) in try claimed.openFile(raw, flags: O_RDONLY)
      }
      let (bytes, decoded) = try read(file, for: name)
      guard decoded.attachments.isEmpty else {
        throw Failure("it is a single file but its manifest lists attachments")
      }
      guard Int64(bytes) == name.bytes else {
        throw Failure("its size \(bytes) does not match the \(name.bytes) bytes in its name")
      }
      return SpoolEntry(
        id: decoded.id, enqueueDate: Self.date(decoded.enqueueTime),
        payload: Array(decoded.payload), attachments: [])
    case S_IFDIR:
      break
    default:
      throw Failure("it is neither a regular file nor a directory")
    }
    let directory = try failing("it is not a directory", on: [.wrongFileType, .symbolicLink]) {
      () throws(ContainerError) in try claimed.openDirectory(raw)
    }
    let file = try failing("it has no entry file", on: [.notFound, .symbolicLink]) {
      () throws(ContainerError) in
      try directory.openFile(SpoolEntryFormat.entryFileName, flags: O_RDONLY)
    }
    let (bytes, decoded) = try read(file, for: name)
    var expected = Set(decoded.attachments.map(\.name))
    expected.insert(SpoolEntryFormat.entryFileName)
    let present = try directory.entries()
    if let stray = present.first(where: { !expected.contains($0) }) {
      throw Failure("it contains '\(stray)', which its manifest does not list")
    }
    var attachments: [SpoolEntry.Attachment] = []
    var total = Int64(bytes)
    for attachment in decoded.attachments {
      try check(attachment, in: directory)
      total += Int64(attachment.size)
      attachments.append(
        .init(
          name: attachment.name, size: Int64(attachment.size),
          url: URL(fileURLWithPath: directory.childPath(attachment.name))))
    }
    guard total == name.bytes else {
      throw Failure("its size \(total) does not match the \(name.bytes) bytes in its name")
    }
    return SpoolEntry(
      id: decoded.id, enqueueDate: Self.date(decoded.enqueueTime),
      payload: Array(decoded.payload), attachments: attachments)
  }

  static func date(_ microseconds: Int64) -> Date {
    Date(timeIntervalSince1970: Double(microseconds) / 1_000_000)
  }

  /// Reads and decodes an entry file, checking it against the entry's name.
  private func read(_ file: borrowing FileDescriptor, for name: SpoolEntryName) throws
    -> (Int, SpoolEntryFormat.Decoded)
  {
    let info = try file.status()
    guard info.st_mode & S_IFMT == S_IFREG else {
      throw SpoolEntryFormat.Failure("the entry file is not a regular file")
    }
    let bytes = try file.readToEnd(limit: Int(min(limits.maximumBytes, Int64(Int.max))))
    let decoded = try SpoolEntryFormat.decode(bytes)
    guard decoded.id == name.id, decoded.enqueueTime == name.time else {
      throw SpoolEntryFormat.Failure("the id or time in the entry file does not match its name")
    }
    return (bytes.count, decoded)
  }

  private func check(_ attachment: SpoolEntryFormat.Attachment, in directory: borrowing Directory)
    throws
  {
    typealias Failure = SpoolEntryFormat.Failure
    let file = try failing(
      "attachment '\(attachment.name)' is missing or is a link", on: [.notFound, .symbolicLink]
    ) { () throws(ContainerError) in try directory.openFile(attachment.name, flags: O_RDONLY) }
    let info = try file.status()
    guard info.st_mode & S_IFMT == S_IFREG, UInt64(info.st_size) == attachment.size else {
      throw Failure(
        "attachment '\(attachment.name)' is \(info.st_size) bytes, not \(attachment.size)")
    }
    var crc = CRC32()
    var chunk = [UInt8](repeating: 0, count: 256 * 1024)
    var seen: UInt64 = 0
    while true {
      let count = try chunk.withUnsafeMutableBytes { buffer in
        Result { () throws(ContainerError) in try file.read(into: buffer) }
      }.get()
      if count == 0 { break }
      chunk.withUnsafeBytes { crc.update(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
      seen += UInt64(count)
    }
    guard seen == attachment.size, crc.value == attachment.checksum else {
      throw Failure("attachment '\(attachment.name)' fails its checksum")
    }
  }
}

/// Runs `body`, turning the listed error codes into a format failure with `reason`.
private func failing<T: ~Copyable>(
  _ reason: String, on codes: Set<ContainerError.Code>,
  _ body: () throws(ContainerError) -> T
) throws -> T {
  do {
    return try body()
  } catch {
    if codes.contains(error.code) { throw SpoolEntryFormat.Failure(reason) }
    throw error
  }
}
