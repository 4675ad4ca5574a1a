import Dispatch
import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A durable multi-producer queue of opaque items in a group container.
///
/// A producer appends an entry without attachments as one record to a segment file it
/// holds (`segments/`), written ahead with zeros so that one `pwrite` and one `fdatasync`
/// (shared by threads enqueueing at once) commit it. An entry with attachments stays files,
/// in the manner of Maildir: written into `tmp/` (a directory holding the entry file and
/// the attachment files), flushed, renamed into `new/`, and `new/` flushed. A consumer reads
/// records from each segment's cursor and claims files by renaming them into `cur/`,
/// validates each entry, hands it to the application, records its id as delivered, and
/// only then passes the record or removes the files. The on-disk protocol, precise enough
/// for other languages, is in `Protocol/container.md`.
///
/// Guarantees:
/// - **No partial item is ever handed over.** Every entry is checked against its checksums
///   before the handler sees it: a record cut short by a crash ends its segment's records,
///   and files appear in `new/` by an atomic rename after their bytes are on disk. A damaged
///   entry is moved to `corrupt/` and reported in ``DrainSummary/setAside``; the drain goes
///   on with the others.
/// - **At least once.** An entry leaves the spool only after the handler returned. A
///   consumer that dies mid-drain leaves its claimed entries in `cur/`, and the next drain
///   hands them over again.
/// - **Each id once to the application.** Delivered ids are recorded as each handler
///   returns and flushed beside the drain once 32 are waiting, by the drain when 64 are and
///   before file entries are removed (a record's cursor passes it before the flush), so a redelivered entry, or a second
///   entry enqueued with the same id, is dropped (``DrainSummary/duplicates``). The windows
///   left: a consumer killed after its handler returned but before the id was written sees
///   the item again, and after a machine crash so do the entries accepted since the last
///   flush; make the handler idempotent by id (see ``SeenKeys``) if that matters.
/// - **No lock while idle.** Producers take no lock. A drain holds an exclusive `flock` on
///   `drain.lock` for its duration only, so drains of one spool run one at a time.
///
/// Handover order is by enqueue time (the producer's `CLOCK_REALTIME`, in microseconds,
/// strictly increasing within one process), then by id. Entries enqueued while a drain
/// runs are picked up by the same drain.
///
/// ```swift
/// let spool = try Spool(container: container)
/// try spool.enqueue(payload: encodedItem, attachments: [.file(photoURL)])
/// // in the consumer:
/// let summary = try spool.drain { entry in try library.add(entry) }
/// ```
public final class Spool: Sendable {
  /// The container the spool lives in.
  public let container: GroupContainer
  /// The spool's name: its directory is `spool/<name>` in the container.
  public let name: String
  /// The quotas and retention settings.
  public let limits: SpoolLimits

  let root: Directory
  let temporary: Directory
  let incoming: Directory
  let claimed: Directory
  let corrupt: Directory
  /// `segments/`: producers' segment files and the consumer's cursors.
  let segments: Directory
  let segmentWriter: SpoolSegmentWriter
  /// Listers of `new/`, `cur/` and `segments/` for the drains, each with a descriptor of
  /// its own kept open, so that a listing costs no `openat` and `close`.
  let incomingLister: DirectoryLister
  let claimedLister: DirectoryLister
  let segmentsLister: DirectoryLister
  let delivered: Mutex<KeyLog>
  /// Flushes of `delivered.keys` that a drain does not wait for (``Spool/complete(_:in:)``).
  let deliveredFlush = BackgroundFlush()
  /// The `fsync` of `new/` after a commit, shared by this process's concurrent producers.
  let incomingSync = GroupSync()
  let usageCache = Mutex<UsageSnapshot?>(nil)
  /// When this instance's drains last swept `tmp/` (``DispatchTime`` nanoseconds).
  let lastStaleSweep = Mutex<UInt64?>(nil)
  /// What the last drain read of the segments, for the next (``takeSegmentProgress()``).
  let segmentProgress = Mutex<[String: SegmentProgress]>([:])
  /// `drain.lock` open and unlocked, kept by the last drain for the next.
  let idleDrainLock = Mutex<FileDescriptor?>(nil)

  /// Pending entries and bytes as of a listing, plus this process's enqueues since.
  struct UsageSnapshot: Sendable {
    var taken: UInt64
    var entries: Int
    var bytes: Int64
  }

  /// How long a quota listing is reused by ``enqueue(payload:attachments:id:)``.
  static var usageListingLifetime: UInt64 { 100_000_000 }

  /// Opens (creating on first use) a spool.
  ///
  /// - Parameters:
  ///   - container: The group container.
  ///   - name: A portable name: letters, digits, `.`, `_`, `-`; `default` unless given.
  ///   - limits: Quotas and retention.
  /// - Throws: ``ContainerError`` for an invalid name or an unusable directory.
  public init(container: GroupContainer, name: String = "default", limits: SpoolLimits = .init())
    throws(ContainerError)
  {
    try SafeName.checkPortable(name, kind: "spool name")
    self.container = container
    self.name = name
    self.limits = limits
    let root = try container.privateDirectory(["spool", name])
    self.temporary = try root.privateDirectory("tmp")
    self.incoming = try root.privateDirectory("new")
    self.claimed = try root.privateDirectory("cur")
    self.corrupt = try root.privateDirectory("corrupt")
    let segments = try root.privateDirectory("segments")
    self.segmentWriter = SpoolSegmentWriter(
      segments: try segments.reopen(), temporary: try temporary.reopen())
    self.incomingLister = DirectoryLister(try incoming.reopen())
    self.claimedLister = DirectoryLister(try claimed.reopen())
    self.segmentsLister = DirectoryLister(try segments.reopen())
    self.segments = segments
    self.delivered = Mutex(
      KeyLog(
        directory: try root.reopen(), fileName: "delivered.keys",
        capacity: limits.deliveredIDCapacity))
    self.root = root
  }

  /// The spool directory's path.
  public var path: String { root.path }

  /// The number of entries waiting: in `new/` and claimed but unfinished in `cur/`.
  ///
  /// - Throws: ``ContainerError`` when a directory cannot be listed.
  public func pendingCount() throws(ContainerError) -> Int {
    try listUsage().entries
  }

  /// Entries and bytes pending, from a listing of the entry names alone.
  func listUsage() throws(ContainerError) -> UsageSnapshot {
    var snapshot = UsageSnapshot(taken: DispatchTime.now().uptimeNanoseconds, entries: 0, bytes: 0)
    let count = { (name: UnsafeRawBufferPointer) in
      snapshot.entries += 1
      snapshot.bytes += SpoolEntryName.byteCount(inRawName: name) ?? 0
    }
    // cur/ first: an entry claimed from new/ between the two is left out, not counted twice.
    try claimed.forEachRawName(count)
    try incoming.forEachRawName(count)
    let pending = try segmentUsage()
    snapshot.entries += pending.entries
    snapshot.bytes += pending.bytes
    return snapshot
  }

  /// The usage the quota check uses: a listing at most ``usageListingLifetime`` old, plus
  /// what this process made visible since.
  ///
  /// The listing is taken holding the cache's lock, which this process's producers hold
  /// too while they make an entry visible (``makeVisible(bytes:_:)``): each entry of this
  /// process is counted once, by the listing or after it, never by both (before, a listing
  /// that saw a record still being flushed counted it, and its commit counted it again).
  func quotaUsage() throws(ContainerError) -> UsageSnapshot {
    try usageCache.withLock { (cache) throws(ContainerError) -> UsageSnapshot in
      let now = DispatchTime.now().uptimeNanoseconds
      if let cached = cache, cached.taken >= now || now - cached.taken < Self.usageListingLifetime {
        return cached
      }
      let fresh = try listUsage()
      cache = fresh
      return fresh
    }
  }

  /// Takes the quota check's next listing now, when there is none or the cached one is
  /// more than half its lifetime old: called after an enqueue's flush (and by
  /// ``prepareQuotaListing()``), off the path of the next enqueue, which then finds a
  /// listing young enough and lists nothing (a listing reads `cur/`, `new/`, `segments/`
  /// and each segment's cursor and records: about twenty calls).
  func refreshUsageAhead() {
    usageCache.withLock { cache in
      let now = DispatchTime.now().uptimeNanoseconds
      if let cached = cache,
        cached.taken >= now || now - cached.taken < Self.usageListingLifetime / 2
      {
        return
      }
      // A failure is met again, and thrown, by the next enqueue's own listing.
      if let fresh = try? listUsage() { cache = fresh }
    }
  }

  /// Makes an entry of this process readable with `body` (the `pwrite` of its record or the
  /// rename of its file into `new/`) and counts it into the cached usage, in one step for
  /// ``quotaUsage()``: an entry is counted as soon as consumers can see it, flushed or not.
  ///
  /// - Returns: What `body` returned: `false` when nothing was made visible (not counted).
  func makeVisible(bytes: Int64, _ body: () throws(ContainerError) -> Bool)
    throws(ContainerError) -> Bool
  {
    try usageCache.withLock { (cache) throws(ContainerError) -> Bool in
      guard try body() else { return false }
      cache?.entries += 1
      cache?.bytes += bytes
      return true
    }
  }
}

/// The last enqueue time handed out in this process, so times strictly increase.
private let lastEnqueueTime = Mutex<Int64>(0)

extension Spool {
  /// A fresh enqueue time in microseconds, strictly greater than the previous one.
  static func nextEnqueueTime() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    let micros = Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
    return lastEnqueueTime.withLock { last in
      last = max(last + 1, micros)
      return last
    }
  }
}
