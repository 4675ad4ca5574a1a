import Dispatch
import Foundation
import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A segment this process appends to, held under an exclusive `flock` for as long as the
/// value lives: a consumer that can take the lock knows no producer will append again.
final class OpenSegment: Sendable {
  let name: String
  let file: FileDescriptor
  /// The file's size: the header, the records and the zeros written ahead.
  let capacity: Int64
  /// The `fdatasync` after an append, shared by this process's threads (group commit).
  ///
  /// Poisoned by its first failure: Linux reports a writeback error once per open file
  /// description, so a later `fdatasync` that returns 0 proves nothing about the records
  /// the failed one covered.
  let commit = GroupSync(poisonedByFailure: true)
  /// The process that opened it: a child made by `fork` inherits the descriptor, its lock
  /// and the writer's state, and must not append at the same offsets as its parent.
  let process = getpid()

  init(name: String, file: consuming FileDescriptor, capacity: Int64) {
    self.name = name
    self.file = file
    self.capacity = capacity
  }
}

/// The producer side of the segments (`Protocol/container.md` §4.4): one segment per
/// producer process appended to at a time (and at most one more held, taken ahead of need),
/// records appended with one `pwrite` each, in order, and one `fdatasync` per append or per
/// group of concurrent appends.
///
/// The next segment is taken ahead of need, on a Dispatch thread, once the current one is
/// three quarters full (and when asked, ``prepareAhead()``): taking one flushes (the zeros
/// of a new one, or `segments/` for an adopted one), which the record that does not fit
/// would otherwise wait for before its `pwrite`.
final class SpoolSegmentWriter: Sendable {
  /// The size a new segment is written ahead to.
  static var segmentSize: Int64 { 1 << 20 }
  /// The room left in the current segment below which the next one is taken.
  static var prepareAheadRoom: Int64 { segmentSize / 4 }
  /// The room a segment taken ahead has: any record fits.
  static var spareRoom: Int {
    SpoolSegmentFormat.frameHeaderSize + SpoolSegmentFormat.maximumSegmentEntry
  }
  /// How long after a failure to take a segment ahead of need no other attempt is made
  /// ahead of need (each writes and flushes up to a segment of zeros).
  static var preparationRetryDelay: UInt64 { 5_000_000_000 }
  /// For tests: runs before each segment is created; what it throws is the creation's
  /// failure.
  let createFault = Mutex<(@Sendable () throws(ContainerError) -> Void)?>(nil)
  /// For tests: runs in each commit before its `fdatasync`; what it throws is the flush's
  /// failure.
  let commitFault = Mutex<(@Sendable () throws(ContainerError) -> Void)?>(nil)

  private let segments: Directory
  private let temporary: Directory
  private struct State {
    var current: OpenSegment?
    /// Where the next record goes in `current`.
    var end: Int64 = 0
    /// Segments whose `fdatasync` failed in this process: never appended to again.
    var poisoned: Set<String> = []
    /// The segment taken ahead of need, and where its first record goes.
    var spare: (segment: OpenSegment, end: Int64)?
    /// The process that asked a Dispatch thread to take ``spare``: a child made by `fork`
    /// has no such thread, so another process's request counts as none.
    var prepareRequested: pid_t?
    /// When taking a spare ahead of need last failed, and in which process.
    ///
    /// The time is `DispatchTime` uptime nanoseconds. No new attempt ahead of need is made
    /// for ``preparationRetryDelay``; the enqueue that needs the segment takes it at need all
    /// the same, and reports its failure.
    var preparationFailed: (process: pid_t, at: UInt64)?

    /// Whether this process may start taking a spare ahead of need now.
    func mayPrepareAhead(process: pid_t, now: UInt64) -> Bool {
      guard spare == nil, prepareRequested != process else { return false }
      guard let failed = preparationFailed, failed.process == process else { return true }
      return now < failed.at || now - failed.at >= SpoolSegmentWriter.preparationRetryDelay
    }
  }
  private let state = Mutex(State())
  /// Serializes taking a spare: one thread of this process takes it, the others wait for it.
  private let preparation = Preparation()

  init(segments: consuming Directory, temporary: consuming Directory) {
    self.segments = segments
    self.temporary = temporary
  }

  /// Runs a record's `pwrite` (the closure it is given) and whatever must happen in one step
  /// with it: the spool counts the record for its quota there.
  typealias Visibly = (() throws(ContainerError) -> Void) throws(ContainerError) -> Void

  /// Appends a record and returns once it is on stable storage.
  ///
  /// The `pwrite`s of this process's threads are made one at a time, in offset order, so
  /// every byte before a record is written when its `fdatasync` starts: a record that
  /// returned never follows a gap.
  ///
  /// - Parameters:
  ///   - visibly: Runs the `pwrite`.
  ///   - whenWritten: Called after the `pwrite`, before the `fdatasync`.
  func append(
    _ frame: [UInt8], visibly: Visibly = { try $0() }, whenWritten: () -> Void = {}
  ) throws(ContainerError) {
    let segment = try write(frame, mayTakeSegment: true, visibly: visibly)!
    whenWritten()
    try commit(segment)
  }

  /// Writes a record with one `pwrite` into the segment this process holds, when it has room
  /// or a segment taken ahead has.
  ///
  /// The first half of ``append(_:whenWritten:)``, the part that cannot wait (no segment to
  /// adopt or create, which flushes). ``commit(_:)`` makes it durable.
  ///
  /// - Returns: The segment to commit; `nil` (nothing written) when a segment must be taken
  ///   first.
  func writeQuickly(_ frame: [UInt8], visibly: Visibly = { try $0() }) throws(ContainerError)
    -> OpenSegment?
  {
    try write(frame, mayTakeSegment: false, visibly: visibly)
  }

  private func write(_ frame: [UInt8], mayTakeSegment: Bool, visibly: Visibly)
    throws(ContainerError) -> OpenSegment?
  {
    while true {
      let written = try state.withLock {
        (state) throws(ContainerError) -> (segment: OpenSegment, prepare: Bool)? in
        let process = getpid()
        if state.spare.map({ $0.segment.process != process }) ?? false { state.spare = nil }
        if state.current == nil || state.current!.process != process
          || state.end + Int64(frame.count) > state.current!.capacity
        {
          state.current = nil
          guard let spare = state.spare, spare.end + Int64(frame.count) <= spare.segment.capacity
          else { return nil }
          state.spare = nil
          state.current = spare.segment
          state.end = spare.end
        }
        let segment = state.current!
        do throws(ContainerError) {
          let end = state.end
          try visibly { () throws(ContainerError) in try segment.file.writeAll(frame, at: end) }
        } catch {
          // What reached the file is unknown: later records go to another segment.
          state.current = nil
          throw error
        }
        state.end += Int64(frame.count)
        let prepare =
          segment.capacity - state.end < Self.prepareAheadRoom
          && state.mayPrepareAhead(process: process, now: DispatchTime.now().uptimeNanoseconds)
        if prepare { state.prepareRequested = process }
        return (segment, prepare)
      }
      if let written {
        if written.prepare { startPreparing() }
        return written.segment
      }
      guard mayTakeSegment else { return nil }
      try prepare(room: frame.count)
    }
  }

  /// Starts taking the next segment on a Dispatch thread, unless one is ready or being taken.
  func prepareAhead() {
    let start = state.withLock { state in
      let process = getpid()
      guard state.mayPrepareAhead(process: process, now: DispatchTime.now().uptimeNanoseconds)
      else { return false }
      state.prepareRequested = process
      return true
    }
    if start { startPreparing() }
  }

  private func startPreparing() {
    let process = getpid()
    DispatchQueue.global(qos: .utility).async {
      // A failure here is met again, and reported, by the enqueue that needs the segment;
      // until then (or for a while) no other attempt is made ahead of need.
      let failed: Bool
      do {
        try self.prepare(room: Self.spareRoom, ahead: true)
        failed = false
      } catch {
        failed = true
      }
      let now = DispatchTime.now().uptimeNanoseconds
      self.state.withLock { state in
        if state.prepareRequested == process { state.prepareRequested = nil }
        if failed { state.preparationFailed = (process, now) }
      }
    }
  }

  /// Waits until no thread of this process is taking a segment ahead of need (for tests).
  func waitForPreparation() {
    while state.withLock({ $0.prepareRequested == getpid() }) { usleep(1000) }
    preparation.waitUntilIdle()
  }

  /// Takes a spare segment with `room` bytes free, unless there is one: adopts or creates
  /// it (flushing), or waits for the thread of this process that is taking one.
  ///
  /// - Parameter ahead: Taken ahead of need: not when the current segment has room
  ///   enough again (an enqueue took one at need before this thread began: a sender's
  ///   first share sent at once).
  private func prepare(room: Int, ahead: Bool = false) throws(ContainerError) {
    let ready = { () -> Bool in
      self.state.withLock { state in
        let process = getpid()
        if ahead, let current = state.current, current.process == process,
          current.capacity - state.end >= Self.prepareAheadRoom
        {
          return true
        }
        return state.spare.map {
          $0.segment.process == process && $0.end + Int64(room) <= $0.segment.capacity
        } ?? false
      }
    }
    guard preparation.begin(unless: ready) else { return }
    defer { preparation.end() }
    let poisoned = state.withLock { $0.poisoned }
    let (segment, end) = try adoptOrCreate(room: room, skipping: poisoned)
    // A spare too small for `room` is let go (unlocked): a later producer may adopt it. So
    // is one poisoned while it was taken (its last holder let it go after a failed commit).
    state.withLock {
      if !$0.poisoned.contains(segment.name) { $0.spare = (segment, end) }
      $0.preparationFailed = nil
    }
  }

  /// Flushes the records written to `segment` (one `fdatasync` perhaps shared with other
  /// threads); after a failure the segment is never appended to again.
  func commit(_ segment: OpenSegment) throws(ContainerError) {
    do throws(ContainerError) {
      try segment.commit.sync { () throws(ContainerError) in
        if let fault = commitFault.withLock({ $0 }) { try fault() }
        try segment.file.syncData()
      }
    } catch {
      state.withLock {
        $0.poisoned.insert(segment.name)
        if $0.current === segment { $0.current = nil }
      }
      throw error
    }
  }

  /// A segment with room for `room` bytes: one a producer that exited left with enough
  /// zeros written ahead, else a new one.
  private func adoptOrCreate(room: Int, skipping poisoned: Set<String>)
    throws(ContainerError) -> (OpenSegment, Int64)
  {
    for name in try segments.entries() where name.hasSuffix(".seg") && !poisoned.contains(name) {
      if let adopted = try adopt(name, room: room) { return adopted }
    }
    return (try create(room: room), Int64(SpoolSegmentFormat.headerSize))
  }

  /// Takes over a segment no producer holds, when its records end in zeros with room and
  /// its consumer's cursor is not past them (§4.4).
  ///
  /// Its size is already on stable storage (its creator flushed it), so appending to it
  /// costs one `fdatasync` of data only; its name is flushed once more here, since its
  /// creator may have died between its rename and its `fsync` of `segments/`.
  private func adopt(_ name: String, room: Int) throws(ContainerError) -> (OpenSegment, Int64)? {
    let opened: FileDescriptor?
    do {
      opened = try SpoolSegmentReader.open(name, in: segments, flags: O_RDWR)
    } catch  where error.code == .wrongFileType {
      return nil
    }
    guard let file = opened, try file.lock(exclusive: true, wait: false) else { return nil }
    let info = try file.status()
    let size = Int64(info.st_size)
    // Unlinked by a consumer that held the lock before us, or not one a producer made.
    guard info.st_nlink > 0, size <= Self.segmentSize,
      size - Int64(SpoolSegmentFormat.headerSize) >= Int64(room),
      try SpoolSegmentFormat.headerProblem(
        file.read(count: SpoolSegmentFormat.headerSize, at: 0)) == nil
    else { return nil }
    let scan = try SpoolSegmentReader.scan(
      file, from: Int64(SpoolSegmentFormat.headerSize), size: size
    ) { _ in }
    // A cursor past the records: a machine crash lost records a consumer had delivered
    // (it may deliver a record before its fdatasync ends). A record appended here, behind
    // the cursor, would never be read.
    let cursor: Int64
    do {
      cursor = try SpoolSegmentReader.cursor(of: name, in: segments).offset
    } catch  where error.code == .wrongFileType {
      return nil  // Its cursor is not a file: the next drain sets it aside.
    }
    guard scan.tail == .zeros, size - scan.end >= Int64(room), cursor <= scan.end,
      try SpoolSegmentReader.isZero(file, from: scan.end, to: size)
    else { return nil }
    try segments.sync()
    return (OpenSegment(name: name, file: file, capacity: size), scan.end)
  }

  /// Creates a segment: written ahead with zeros in `tmp/` and flushed, locked, renamed
  /// into `segments/`, and `segments/` flushed.
  private func create(room: Int) throws(ContainerError) -> OpenSegment {
    let page: Int64 = 4096
    let needed = Int64(SpoolSegmentFormat.headerSize + room)
    let capacity = max(Self.segmentSize, (needed + page - 1) / page * page)
    let time = Spool.nextEnqueueTime()
    let digits = String(time)
    let name =
      String(repeating: "0", count: max(0, 16 - digits.count)) + digits
      + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max)).seg"
    if let fault = createFault.withLock({ $0 }) { try fault() }
    let file = try temporary.openFile(name, flags: O_RDWR, create: true, exclusive: true)
    do throws(ContainerError) {
      var bytes = SpoolSegmentFormat.header()
      bytes.append(contentsOf: repeatElement(0, count: Int(capacity) - bytes.count))
      try file.writeAll(bytes, at: 0)
      try file.syncData()
      _ = try file.lock(exclusive: true, wait: false)
      guard try temporary.rename(name, to: segments, as: name, replace: false) else {
        throw ContainerError(
          code: .notFound, path: temporary.childPath(name),
          message: "The new segment '\(temporary.childPath(name))' disappeared before it was "
            + "committed; is another process cleaning tmp/ too eagerly?")
      }
    } catch {
      try? temporary.remove(name)
      throw error
    }
    try segments.sync()
    return OpenSegment(name: name, file: file, capacity: capacity)
  }
}

/// Who of this process's threads is taking a segment ahead of need: one at a time, the
/// others wait for it.
private final class Preparation: @unchecked Sendable {
  // Safety of @unchecked Sendable: `running` and `process` are read and written with
  // `condition` locked.
  private let condition = NSCondition()
  private var running = false
  /// The process whose thread is running: a child made by `fork` does not wait for its
  /// parent's.
  private var process: pid_t = 0

  /// Waits for a thread of this process that is taking a segment, then starts taking one
  /// unless `done` says there is no need.
  ///
  /// - Returns: Whether the caller takes one (and then calls ``end()``).
  func begin(unless done: () -> Bool) -> Bool {
    condition.lock()
    defer { condition.unlock() }
    while running && process == getpid() { condition.wait() }
    if done() { return false }
    running = true
    process = getpid()
    return true
  }

  func end() {
    condition.lock()
    running = false
    condition.broadcast()
    condition.unlock()
  }

  func waitUntilIdle() {
    condition.lock()
    while running && process == getpid() { condition.wait() }
    condition.unlock()
  }
}
