import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A drain's view of one segment: the records it found, which of them are finished, and the
/// consumer's position (`Protocol/container.md` §4.9).
///
/// Kept by the ``Spool`` between its drains, so a drain woken for one share reads only what
/// was appended since the last one.
final class SegmentProgress: @unchecked Sendable {
  // Safety of @unchecked Sendable: only a drain uses it, and a drain holds the spool's
  // `drain.lock` (an flock of its own descriptor, exclusive even within one process); the
  // spool hands it from one drain to the next under a mutex.
  struct Entry {
    var offset: Int64
    var length: Int
    var enqueueTime: Int64
    var id: String
    /// Not a record: damaged bytes the reader resumed past, and why the records stopped.
    var damage: String? = nil
    var done = false
  }

  let file: FileDescriptor
  var records: [Entry] = []
  /// The first record not finished.
  var next = 0
  var cursor: SpoolCursor
  /// Where the valid records found so far end.
  var scannedEnd: Int64
  /// Records finished since the cursor was last written.
  var changed = false
  var position: FileDescriptor?

  init(file: consuming FileDescriptor, cursor: SpoolCursor) {
    self.file = file
    self.cursor = cursor
    self.scannedEnd = cursor.offset
  }

  /// Reads the records past ``scannedEnd``, in chunks, up to the zeros written ahead,
  /// resuming past damage where the framing allows (or, with `released`, where a valid
  /// record follows it: `Protocol/container.md` §4.9).
  ///
  /// - Parameter released: No producer holds the segment (this drain has its lock).
  /// - Returns: The indices of the records found, and of the damaged ranges passed.
  func scanMore(released: Bool = false) throws(ContainerError) -> Range<Int> {
    let size = Int64(try file.status().st_size)
    guard scannedEnd < size else { return records.count..<records.count }
    var found: [Entry] = []
    let scan = try SpoolSegmentReader.scanResuming(
      file, from: scannedEnd, size: size, released: released,
      found: { record in
        found.append(
          Entry(
            offset: Int64(record.offset), length: record.length,
            enqueueTime: record.enqueueTime, id: record.id))
      },
      damaged: { range, reason in
        found.append(
          Entry(
            offset: range.lowerBound, length: Int(range.upperBound - range.lowerBound),
            enqueueTime: 0, id: "", damage: reason))
      })
    scannedEnd = scan.end
    records += found
    return records.count - found.count..<records.count
  }

  /// Whether the cursor in the open cursor file is still the one this drain wrote.
  ///
  /// When another consumer moved it, this view is stale. `nil` when no cursor file is open.
  func cursorIsCurrent() throws(ContainerError) -> Bool? {
    guard position != nil else { return nil }
    return SpoolCursor(try position!.read(count: SpoolCursor.size + 1, at: 0)) == cursor
  }

  /// Whether ``advance(name:in:flushEvery:)`` would flush now: its count of passed records
  /// would reach `flushEvery`.
  func advanceFlushes(flushEvery: Int) -> Bool {
    guard changed else { return false }
    var passed = next
    while passed < records.count, records[passed].done { passed += 1 }
    guard passed > next else { return false }
    return Int(cursor.unflushed) + (passed - next) >= flushEvery
  }

  /// Moves the cursor past the finished records at its front and writes it, creating the
  /// cursor file when there is none.
  ///
  /// The cursor is not flushed each time, nor when its file is created: the ids of the
  /// records it passes are in `delivered.keys`, so a cursor that a machine crash sets back,
  /// or a cursor file it loses (read as the first record), only makes the next drain drop
  /// those records as duplicates; the flush before `delivered.keys` forgets ids makes every
  /// cursor durable first (`Protocol/container.md` §4.6). It is flushed when it has passed
  /// half the ids `delivered.keys` keeps, which bounds how far a crash sets it back once the
  /// file's name is durable (at the latest after the next compaction's barrier: before, a
  /// crash may lose the file, and the segment is re-read from its first record).
  func advance(
    name: String, in segments: borrowing Directory, flushEvery: Int
  ) throws(ContainerError) {
    guard changed else { return }
    changed = false
    let before = next
    while next < records.count, records[next].done { next += 1 }
    guard next > before else { return }
    cursor.offset = next < records.count ? records[next].offset : scannedEnd
    cursor.unflushed += UInt32(min(next - before, Int(UInt32.max) - Int(cursor.unflushed)))
    let flush = Int(cursor.unflushed) >= flushEvery
    if flush { cursor.unflushed = 0 }
    if position == nil {
      do {
        position = try SpoolSegmentReader.openCursor(
          of: name, in: segments, flags: O_RDWR, create: true)
      } catch  where error.code == .wrongFileType {
        // A cursor that is not a file, and that could not be set aside: no cursor is
        // written, so the next drain reads the segment from its first record and drops what
        // `delivered.keys` holds as duplicates.
        return
      }
    }
    try position!.writeAll(cursor.bytes, at: 0)
    if flush { try position!.syncData() }
  }
}

extension Spool {
  /// The segments the last drain of this instance read, when their cursors on disk are still
  /// the ones it left (another consumer process may have drained since).
  func takeSegmentProgress() throws(ContainerError) -> [String: SegmentProgress] {
    var kept = segmentProgress.withLock { cache in
      let taken = cache
      cache = [:]
      return taken
    }
    for (name, progress) in kept {
      var current = try progress.cursorIsCurrent()
      if current == nil { current = try? cursor(of: name) == progress.cursor }
      if current != true { kept[name] = nil }
    }
    return kept
  }

  /// The name of a segment's cursor file: `<base>.pos` for `<base>.seg`.
  static func positionName(of segment: String) -> String {
    String(segment.dropLast(".seg".count)) + ".pos"
  }

  /// The cursor of a segment, or its first record when it has none or an invalid one.
  func cursor(of segment: String) throws(ContainerError) -> SpoolCursor {
    try SpoolSegmentReader.cursor(of: segment, in: segments)
  }

  /// Opens a segment for reading, or `nil` when it is gone.
  ///
  /// A cursor file that is not a regular file is set aside (the drain starts at the first
  /// record and drops what `delivered.keys` holds as duplicates); when setting it aside
  /// fails, the drain starts at the first record all the same (the segment is valid).
  ///
  /// - Throws: `wrongFileType` when the segment is not a regular file.
  ///
  /// - Parameter quick: Leave a cursor that is not a regular file for a drain step that may
  ///   wait (returns `nil` and sets ``DrainSession/deferred``).
  func openSegment(_ name: String, in session: DrainSession, quick: Bool = false)
    throws(ContainerError) -> SegmentProgress?
  {
    guard let file = try SpoolSegmentReader.open(name, in: segments, flags: O_RDONLY) else {
      return nil
    }
    let start: SpoolCursor
    do {
      start = try cursor(of: name)
    } catch  where error.code == .wrongFileType {
      if quick {
        session.deferred = true
        return nil
      }
      setAside(
        Self.positionName(of: name), from: segments, reason: "the cursor is not a regular file",
        in: session)
      do {
        start = try cursor(of: name)
      } catch  where error.code == .wrongFileType {
        start = SpoolCursor(offset: Int64(SpoolSegmentFormat.headerSize), unflushed: 0)
      }
    }
    return SegmentProgress(file: file, cursor: start)
  }

  /// Entries and bytes pending in segments: the records from each cursor on, counted by
  /// their frame headers (a quota figure, not a validation).
  func segmentUsage() throws(ContainerError) -> (entries: Int, bytes: Int64) {
    var entries = 0
    var bytes: Int64 = 0
    for name in try segments.entries() where name.hasSuffix(".seg") {
      let opened: FileDescriptor?
      do {
        opened = try SpoolSegmentReader.open(name, in: segments, flags: O_RDONLY)
      } catch  where error.code == .wrongFileType {
        continue  // Not a segment: the next drain sets it aside.
      }
      guard let file = opened else { continue }
      // A cursor that is not a file counts from the first record (a drain sets it aside).
      let start: Int64
      do {
        start = try cursor(of: name).offset
      } catch  where error.code == .wrongFileType {
        start = Int64(SpoolSegmentFormat.headerSize)
      }
      let size = Int64(try file.status().st_size)
      guard size > start else { continue }
      let counted = try SpoolSegmentReader.countFrames(file, from: start, size: size)
      entries += counted.records
      bytes += counted.bodyBytes
    }
    return (entries, bytes)
  }

  /// Lists the segments and returns the records of each that this drain has not seen;
  /// removes the segments that are finished (every record done, no producer holding it).
  ///
  /// - Parameter quick: Leave out what can wait (sets ``DrainSession/deferred``): removing a
  ///   finished segment (and searching it once released), a cursor whose segment is gone,
  ///   and a segment not read before by this drain that needs something set aside. None of
  ///   them holds a record to hand over that this listing would otherwise miss, except a
  ///   segment whose cursor is not a regular file (read by the next, unhurried listing).
  func refillSegments(_ session: DrainSession, quick: Bool = false) throws(ContainerError)
    -> [DrainSession.Item]
  {
    let names = try segmentsLister.entries()
    let present = Set(names)
    for name in session.segments.keys where !present.contains(name) {
      session.segments[name] = nil  // Removed by another consumer.
    }
    var items: [DrainSession.Item] = []
    for name in names where name.hasSuffix(".pos") {
      // The cursor of a segment removed by a consumer that stopped before removing it.
      if !present.contains(String(name.dropLast(".pos".count)) + ".seg") {
        if quick {
          session.deferred = true
          continue
        }
        try removeCursor(name, in: session)
      }
    }
    for name in names where name.hasSuffix(".seg") {
      let progress: SegmentProgress
      if let known = session.segments[name] {
        progress = known
      } else {
        let opened: SegmentProgress
        do {
          guard let segment = try openSegment(name, in: session, quick: quick) else {
            continue
          }
          opened = segment
        } catch  where error.code == .wrongFileType {
          if quick {
            session.deferred = true
            continue
          }
          setAside(name, from: segments, reason: "it is not a regular file", in: session)
          try removeCursor(Self.positionName(of: name), in: session)
          continue
        }
        let header = try opened.file.read(count: SpoolSegmentFormat.headerSize, at: 0)
        if let problem = SpoolSegmentFormat.headerProblem(header) {
          if quick {
            session.deferred = true
            continue
          }
          // Segments are complete when renamed in: a bad header is damage.
          setAside(name, from: segments, reason: "its header is not valid: \(problem)", in: session)
          try removeCursor(Self.positionName(of: name), in: session)
          continue
        }
        progress = opened
        session.segments[name] = progress
      }
      // A segment's records not finished by earlier drains (a handler failed) are handed
      // over again, once per drain.
      let firstVisit = session.visited.insert(name).inserted
      var fresh = try progress.scanMore()
      if fresh.isEmpty, progress.next == progress.records.count,
        try progress.file.lock(exclusive: true, wait: false)
      {
        if quick {
          // Finished, and no producer holds it: its search and removal can wait.
          progress.file.unlock()
          session.deferred = true
          continue
        }
        // No producer holds it: nothing more can be appended after this scan, and what
        // ends the records is damage or the torn tail of a write a crash cut short.
        fresh = try progress.scanMore(released: true)
        if fresh.isEmpty {
          try retire(name, progress, in: session)
          continue
        }
        progress.file.unlock()
      }
      let unfinished = firstVisit ? progress.next..<progress.records.count : fresh
      for index in unfinished where !progress.records[index].done {
        let record = progress.records[index]
        // Damaged bytes have no name: set aside first, like names that do not parse.
        let entryName =
          record.damage != nil
          ? nil
          : SpoolEntryName(
            time: record.enqueueTime,
            bytes: Int64(record.length - SpoolSegmentFormat.frameHeaderSize), id: record.id)
        items.append((entryName, "\(name)@\(record.offset)", .record(segment: name, index: index)))
      }
    }
    return items
  }

  /// Removes a finished segment and its cursor.
  ///
  /// Called after a scan with the segment's lock found nothing more: no valid record follows
  /// where the records end (a torn tail of a producer that stopped mid-write is ignored).
  private func retire(
    _ name: String, _ progress: SegmentProgress, in session: DrainSession
  ) throws(ContainerError) {
    session.segments[name] = nil
    // Unlinked while locked: a producer that opened it meanwhile sees it gone and skips it.
    try segments.remove(name)
    try removeCursor(Self.positionName(of: name), in: session)
  }

  /// Removes a cursor file whose segment is gone; one that is a directory (not a cursor) is
  /// set aside instead, and reported (again by each drain while it cannot be moved).
  private func removeCursor(_ name: String, in session: DrainSession) throws(ContainerError) {
    do {
      try segments.remove(name)
    } catch  where error.cause?.errno == EISDIR {
      setAside(name, from: segments, reason: "the cursor is not a regular file", in: session)
    }
  }

  /// Reads, checks and decodes a record that a scan found valid.
  func readRecord(_ record: SegmentProgress.Entry, of progress: SegmentProgress) throws
    -> SpoolEntry
  {
    let frame = try progress.file.read(count: record.length, at: record.offset)
    let decoded = try SpoolSegmentFormat.decodeRecord(frame)
    guard decoded.id == record.id, decoded.enqueueTime == record.enqueueTime else {
      throw SpoolEntryFormat.Failure("the record changed after it was listed")
    }
    return SpoolEntry(
      id: decoded.id, enqueueDate: Self.date(decoded.enqueueTime),
      payload: Array(decoded.payload), attachments: [])
  }
}
