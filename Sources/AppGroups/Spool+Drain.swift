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
        let claim = try nextClaim(&session)
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
  /// The file-system work (waiting for the drain lock, claiming, validating, removing and
  /// flushing) runs on a Dispatch thread, never on the Swift concurrency pool; only the
  /// handler runs on the caller's executor.
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
    // One hop to a Dispatch thread per entry: completing an entry and claiming the next
    // are one step, and so are beginning the drain and claiming the first.
    let (session, first) = try await runBlocking { () throws(ContainerError) in
      var session = try self.beginDrain(wait: waitForOtherConsumers)
      let claim = (limit.map { $0 > 0 } ?? true) ? try self.nextClaim(&session) : nil
      return (session, claim)
    }
    var claim = first
    do {
      while let current = claim {
        try await handler(current.entry)
        claim = try await runBlocking { () throws(ContainerError) in
          var state = session
          try self.complete(current, in: &state)
          guard limit.map({ state.summary.delivered < $0 }) ?? true else {
            try self.settle(&state)
            return nil
          }
          // Settles before it reports the end (nothing left to list).
          return try self.nextClaim(&state)
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
  /// Entries handed over whose ids are written to `delivered.keys` but not yet flushed; they
  /// are removed (files) or passed (records) after the flush (``Spool/settle(_:)``).
  var unsettled: [(raw: String, source: Source)] = []

  /// Whether `cur/` was listed: only a consumer holding `drain.lock` adds to it, so one
  /// listing per drain finds everything left there.
  var listedClaimed = false
  /// The segments this drain has read; the first read hands over what earlier drains left.
  var visited: Set<String> = []
  private let spool: Spool

  init(lock: consuming FileDescriptor, spool: Spool, segments: [String: SegmentProgress]) {
    self.lock = .some(lock)
    self.spool = spool
    self.segments = segments
  }

  /// Hands what this drain knows of the segments, and `drain.lock` unlocked, to the spool's
  /// next drain.
  deinit {
    let segments = self.segments
    spool.segmentProgress.withLock { $0 = segments }
    lock?.unlock()
    spool.idleDrainLock.withLock { $0 = lock.take() }
  }
}

/// An entry claimed, validated and ready for the handler.
struct Claim: Sendable {
  var raw: String
  var source: DrainSession.Source
  var entry: SpoolEntry
}

extension Spool {
  func beginDrain(wait: Bool) throws(ContainerError) -> DrainSession {
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
    let session = DrainSession(lock: lock, spool: self, segments: try takeSegmentProgress())
    if staleSweepIsDue() { session.summary.staleTemporariesRemoved = try removeStaleTemporaries() }
    try delivered.withLock { (log) throws(ContainerError) in try log.refresh(repair: true) }
    return session
  }

  /// Whether a drain should sweep `tmp/`: the first drain of this instance, then at most
  /// once a minute (or once per ``SpoolLimits/staleTemporaryAge`` when shorter), so a
  /// drain woken for each share does not list `tmp/` each time.
  private func staleSweepIsDue() -> Bool {
    let now = DispatchTime.now().uptimeNanoseconds
    let age = limits.staleTemporaryAge.components
    let ageNanoseconds = max(0, age.seconds) * 1_000_000_000 + age.attoseconds / 1_000_000_000
    let interval = UInt64(min(60_000_000_000, ageNanoseconds))
    return lastStaleSweep.withLock { last in
      // `now < last`: another thread swept after this one read the clock.
      if let last, now < last || now - last < interval { return false }
      last = now
      return true
    }
  }

  /// Lists `cur/`, `new/` and the segments again, keeping what this drain has not tried
  /// yet, sorted.
  private func refill(_ session: inout DrainSession) throws(ContainerError) {
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
    items += try refillSegments(session)
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

  /// Claims the next valid entry, dropping duplicates and setting aside corrupt ones.
  func nextClaim(_ session: inout DrainSession) throws(ContainerError) -> Claim? {
    while true {
      if session.queue.isEmpty {
        // The listing is used up: what this drain handed over so far becomes durable
        // before the next listing (and before an idle spool ends the drain).
        try settle(&session)
        try refill(&session)
        if session.queue.isEmpty { return nil }
      }
      let item = session.queue.removeLast()
      if case .record(let segment, let index) = item.source {
        if let claim = try claimRecord(item.raw, segment: segment, index: index, in: session) {
          return claim
        }
        continue
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
        return Claim(
          raw: item.raw, source: item.source, entry: try validate(item.raw, name: name))
      } catch let failure as SpoolEntryFormat.Failure {
        setAside(item.raw, from: claimed, reason: failure.reason, in: session)
      } catch let error as ContainerError {
        throw error
      } catch {
        fatalError("unexpected error \(error)")
      }
    }
  }

  /// Claims a segment's record.
  ///
  /// Drops it when its id was delivered, sets it aside when it no longer reads back valid,
  /// else reads it. Records are not moved: the cursor passes them once their ids are
  /// flushed.
  private func claimRecord(
    _ raw: String, segment: String, index: Int, in session: DrainSession
  ) throws(ContainerError) -> Claim? {
    guard let progress = session.segments[segment] else { return nil }
    let record = progress.records[index]
    if let damage = record.damage {
      setAsideDamage(segment, index: index, reason: damage, of: progress, in: session)
      return nil
    }
    if delivered.withLock({ $0.contains(record.id) }) {
      progress.records[index].done = true
      progress.changed = true
      session.summary.duplicates += 1
      return nil
    }
    do {
      let entry = try readRecord(record, of: progress)
      return Claim(raw: raw, source: .record(segment: segment, index: index), entry: entry)
    } catch let failure as SpoolEntryFormat.Failure {
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
      return nil
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
      let bytes = try progress.file.read(count: range.length, at: range.offset)
      try corrupt.replaceFile(copy, with: bytes)
    } catch let failure {
      error.message += " Copying them failed: \(failure.message)"
    }
    progress.records[index].done = true
    progress.changed = true
    session.summary.setAside.append(error)
  }

  /// The most entries handed over before their ids are flushed and the entries removed.
  static var settleBatch: Int { 64 }

  /// Records the id as delivered; the entry is removed once the record is flushed.
  ///
  /// The record is written at once, so a consumer process that is killed from here on never
  /// hands the entry over again; it is flushed (one `fdatasync` for up to ``settleBatch``
  /// entries) by ``settle(_:)``, and only then is the entry removed.
  func complete(_ claim: Claim, in session: inout DrainSession) throws(ContainerError) {
    _ = try delivered.withLock { (log) throws(ContainerError) in
      try log.insert([claim.entry.id], flush: false, compacting: false)
    }
    session.unsettled.append((claim.raw, claim.source))
    session.summary.delivered += 1
    if session.unsettled.count >= Self.settleBatch { try settle(&session) }
  }

  /// Flushes the ids written since the last flush, then removes their entries (files) or
  /// moves the cursors past them (records).
  func settle(_ session: inout DrainSession) throws(ContainerError) {
    if !session.unsettled.isEmpty {
      try delivered.withLock { (log) throws(ContainerError) in try log.flush() }
      for (raw, source) in session.unsettled {
        switch source {
        case .record(let segment, let index):
          session.segments[segment]?.records[index].done = true
          session.segments[segment]?.changed = true
        case .incoming, .claimed:
          // Unlinked directly: a single-file entry costs no status call.
          do {
            try claimed.remove(raw)
          } catch  where error.cause?.errno == EISDIR {
            try claimed.removeTree(raw)
          }
        }
      }
      session.unsettled = []
    }
    let flushEvery = max(1, limits.deliveredIDCapacity / 2)
    for (name, progress) in session.segments {
      try progress.advance(name: name, in: segments, flushEvery: flushEvery)
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
      _ = try source.rename(raw, to: corrupt, as: target, replace: false)
      error.path = corrupt.childPath(target)
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
