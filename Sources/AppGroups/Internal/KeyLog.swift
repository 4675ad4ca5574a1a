import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A bounded set of keys persisted as an append-only ``KeyLogFormat`` file.
///
/// The file is kept longer than its records: zero bytes past the last record, written and
/// flushed ahead of need (``preallocation``), so appending a record overwrites bytes that
/// already exist and its `fdatasync` flushes data alone, without a file-system journal
/// commit for a new size. A length of zero ends the log like any invalid record, so other
/// readers (and older versions, which cut the zeros off before appending) read it as before.
///
/// Not thread-safe: callers serialize access in the process (a mutex) and across processes
/// (an exclusive `flock`), and call ``refresh(repair:)`` after taking the lock.
struct KeyLog: ~Copyable {
  let directory: Directory
  let fileName: String
  let capacity: Int
  private(set) var keys: [String] = []
  private(set) var members: Set<String> = []
  private var identity: (dev_t, ino_t)?
  /// The end of the last valid record: where the next one is written.
  private var offset = 0
  /// The file's size: `offset` plus the zero bytes written ahead.
  private var size = 0
  /// The log open for reading and writing, kept between appends and refreshes; `nil`
  /// until the first one or after the file was replaced.
  private var writer: FileDescriptor?
  /// Keys counted as perhaps not on stable storage, ever: those this instance wrote, and
  /// those it read that others wrote (another process, or another instance, may have left
  /// them unflushed: `Protocol/container.md` §4.6 bounds them across consumers).
  private var counted: UInt64 = 0
  /// How many of ``counted`` an `fdatasync` that ended covered: it started after they
  /// were in the file.
  private var flushedThrough: UInt64 = 0
  /// How many keys may be in the file but not on stable storage.
  var unflushedKeys: Int { Int(counted - flushedThrough) }
  /// Whether records may be in the file but not on stable storage.
  private var unflushed: Bool { counted > flushedThrough }
  /// The failure of an `fdatasync` of the log, once one failed: every later flush throws it.
  ///
  /// Linux reports a writeback error once per open file description, and the writer and
  /// the descriptors of ``detachedFlush()`` share one, so a flush after a failed one may
  /// return 0 although the keys the failed one covered never reached the disk. Cleared
  /// only when ``compact()`` writes the keys to a new file; a new instance starts clean.
  private var poison: ContainerError?
  /// Whether ``refresh(repair:)`` has read the file at least once.
  private(set) var isLoaded = false
  /// How many times an append created the file (or this instance read a file another
  /// created, which may have exited before its flush of the name), and how many of those
  /// names an `fsync` of the directory flushed: an append creates it without a flush, and
  /// the flush that covers its keys flushes the name too before they count as flushed.
  private var creations: UInt64 = 0
  private var namesFlushed: UInt64 = 0
  private var nameUnflushed: Bool { creations > namesFlushed }
  /// Whether the file's name may not be on stable storage yet (for tests).
  var nameMayBeUnflushed: Bool { nameUnflushed }
  /// For tests: runs before each `fsync` of the directory that flushes the file's name;
  /// what it throws is that `fsync`'s failure.
  var directoryFault: (@Sendable () throws(ContainerError) -> Void)?

  /// How many zero bytes an append that runs out of room writes ahead of the records.
  static var preallocation: Int { 64 * 1024 }

  init(directory: consuming Directory, fileName: String, capacity: Int) {
    self.directory = directory
    self.fileName = fileName
    self.capacity = max(1, capacity)
  }

  var path: String { directory.childPath(fileName) }

  private mutating func reset() throws(ContainerError) {
    try dropWriter()
    keys = []
    members = []
    identity = nil
    offset = 0
    size = 0
  }

  /// Closes the writer, first flushing what was written through it without a flush.
  private mutating func dropWriter() throws(ContainerError) {
    try flush()
    writer = nil
  }

  /// Brings the in-memory set up to date with the file.
  ///
  /// With `repair`, cuts off a torn tail: anything but zeros past the last valid record.
  ///
  /// With `quick`, does nothing and returns `false` when that would flush the keys this
  /// instance wrote (the file is gone or empty, with keys unflushed) or read the file from
  /// its start (it is another file: another instance compacted it, or cut it shorter).
  ///
  /// - Returns: Whether the set is up to date: `false` only with `quick`.
  @discardableResult
  mutating func refresh(repair: Bool, quick: Bool = false) throws(ContainerError) -> Bool {
    defer { isLoaded = true }
    guard let info = try directory.status(of: fileName) else {
      if quick && unflushed { return false }
      try reset()
      return true
    }
    guard info.st_mode & S_IFMT == S_IFREG else {
      throw .syscall("openat", errno: ELOOP, path: path, doing: "open the key log")
    }
    // Size 0: created by a writer that was interrupted before it wrote the header.
    guard info.st_size > 0 else {
      if quick && unflushed { return false }
      try reset()
      return true
    }
    let sameFile = identity.map { $0 == (info.st_dev, info.st_ino) } ?? false
    // Otherwise the writer is flushed and dropped, and the file read whole.
    let readsOn = sameFile && Int(info.st_size) >= offset
    if quick && !readsOn { return false }
    if sameFile && Int(info.st_size) == size, let kept = writer.take() {
      // The file this process writes, open for reading too: nothing new costs one `pread`.
      let nothingNew: Bool
      do {
        nothingNew = try Self.nothingAt(offset, in: kept)
      } catch {
        writer = consume kept
        throw error
      }
      writer = consume kept
      if nothingNew { return true }
    }
    let file = try directory.openFile(fileName, flags: repair ? O_RDWR : O_RDONLY)
    var start = 0
    if readsOn {
      // Another writer may have filled the zeros without changing the size: a zero
      // length (or the end of the file) where the next record would start means nothing new.
      if try Self.nothingAt(offset, in: file), Int(info.st_size) == size { return true }
      start = offset
    } else {
      try dropWriter()
      keys = []
      members = []
    }
    try file.seek(to: Int64(start))
    let bytes = try file.readToEnd(limit: 64 << 20)
    var parseFrom = 0
    if start == 0 {
      do { try KeyLogFormat.checkHeader(bytes) } catch {
        throw .corrupt(path, error.reason)
      }
      parseFrom = KeyLogFormat.headerSize
      // Another writer (another process, or another instance) created this file, and may
      // have exited before the flush that covers its name: this instance's next flush
      // `fsync`s the directory too before any key counts as flushed (`Protocol/container.md`
      // §5).
      creations &+= 1
    }
    let parsed = KeyLogFormat.parseRecords(bytes, from: parseFrom)
    for key in parsed.keys where members.insert(key).inserted { keys.append(key) }
    // Written by others, flushed or not: this instance cannot tell, so it counts them with
    // its own, and its next ``flush()`` covers them (an `fdatasync` flushes the file's data
    // whoever wrote it). An instance that reads the log first counts every key in it.
    if !parsed.keys.isEmpty {
      if start == 0 { flushedThrough = counted }
      counted += UInt64(parsed.keys.count)
    }
    offset = start + parsed.validLength
    let status = try file.status()
    identity = (status.st_dev, status.st_ino)
    size = Int(status.st_size)
    let rest = bytes[min(parsed.validLength, bytes.count)...]
    if repair && offset < size && rest.contains(where: { $0 != 0 }) {
      try file.truncate(to: Int64(offset))
      size = offset
    }
    // Opened for reading and writing: kept as the writer, so the next refresh and append
    // open nothing.
    if repair && writer == nil { writer = consume file }
    return true
  }

  /// Whether the log has no record at `offset`: it ends there or holds a zero length.
  private static func nothingAt(_ offset: Int, in file: borrowing FileDescriptor)
    throws(ContainerError) -> Bool
  {
    var length: UInt32 = 0
    let count = try file.call("pread", doing: "read") { fd in
      withUnsafeMutableBytes(of: &length) { pread(fd, $0.baseAddress, 4, off_t(offset)) }
    }
    return count < 4 || length == 0
  }

  func contains(_ key: String) -> Bool { members.contains(key) }

  /// Appends the keys that are not yet members, durably unless `flush` is `false`.
  ///
  /// Without `flush`, the records are written (other processes see them, and they survive
  /// the death of this one) but reach stable storage only with ``flush()``.
  ///
  /// With `compacting` `false`, a log grown past twice its capacity is not compacted here:
  /// the caller calls ``compact()`` when forgetting the oldest keys is safe
  /// (``isOverCapacity``).
  ///
  /// Returns which were new.
  mutating func insert(
    _ newKeys: [String], flush: Bool = true, compacting: Bool = true
  ) throws(ContainerError) -> [Bool] {
    var added: [Bool] = []
    var records: [UInt8] = []
    var fresh: [String] = []
    for key in newKeys {
      guard !key.isEmpty, key.utf8.count <= KeyLogFormat.maximumKeyLength else {
        throw ContainerError(
          code: .invalidName, path: path,
          message: "A key must be 1 to \(KeyLogFormat.maximumKeyLength) bytes of UTF-8.")
      }
      if members.insert(key).inserted {
        fresh.append(key)
        records += KeyLogFormat.record(key)
        added.append(true)
      } else {
        added.append(false)
      }
    }
    guard !fresh.isEmpty else { return added }
    keys += fresh
    try append(records, flush: flush, keys: fresh.count)
    if compacting, isOverCapacity { try compact() }
    return added
  }

  /// Whether the log holds more than twice its capacity: ``compact()`` is due.
  var isOverCapacity: Bool { keys.count > 2 * capacity }

  /// Flushes records written without flushing (and the file's name, when an append
  /// created it without a flush).
  ///
  /// - Throws: The failure of the `fdatasync`, or of an earlier one (``flushFailed(_:)``).
  mutating func flush() throws(ContainerError) {
    guard unflushed || nameUnflushed else { return }
    // A descriptor opened afresh flushes the same file's data if the writer was lost to an
    // error after it wrote.
    if writer == nil { writer = try directory.openFile(fileName, flags: O_RDWR) }
    guard let file = writer.take() else { return }
    do {
      try sync(file)
    } catch {
      writer = consume file
      throw error
    }
    writer = consume file
    try flushName()
    flushedThrough = counted
  }

  /// `fsync`s the directory when an append created the file without a flush (or another
  /// writer did), poisoning the log when that fails: the directory's descriptor reports a
  /// writeback error once, so a retry's 0 proves nothing either (``flushFailed(_:)``).
  private mutating func flushName() throws(ContainerError) {
    guard nameUnflushed else { return }
    let names = creations
    do {
      if let directoryFault { try directoryFault() }
      try directory.sync()
    } catch {
      flushFailed(error)
      throw error
    }
    namesFlushed = names
  }

  /// `fdatasync`s `file`, the writer, poisoning the log when that fails.
  private mutating func sync(_ file: borrowing FileDescriptor) throws(ContainerError) {
    if let poison { throw poison }
    do {
      try file.syncData()
    } catch {
      flushFailed(error)
      throw error
    }
  }

  /// Records that an `fdatasync` of the log failed (here or on a descriptor of
  /// ``detachedFlush()``): every later flush throws, instead of trusting a 0 from the same
  /// open file description.
  mutating func flushFailed(_ failure: ContainerError) {
    guard poison == nil else { return }
    var poison = failure
    poison.message +=
      " Keys written to the log before that flush failed may not be on disk, so every later "
      + "flush of it fails too until the spool is opened again."
    self.poison = poison
  }

  /// A flush to make without holding the caller's lock, so that keys can be written while
  /// it runs: a descriptor of the log's file (its own, sharing the open file description)
  /// and the counts to pass to ``flushed(through:names:)`` once its `fdatasync` returned 0.
  ///
  /// - Returns: `nil` when nothing waits for a flush.
  /// - Throws: The failure of an earlier flush (``flushFailed(_:)``).
  mutating func detachedFlush() throws(ContainerError) -> DetachedFlush? {
    guard unflushed else { return nil }
    if let poison { throw poison }
    if writer == nil { writer = try directory.openFile(fileName, flags: O_RDWR) }
    guard let file = writer.take() else { return nil }
    let copy = fcntl(file.rawValue, F_DUPFD_CLOEXEC, 0)
    let failure = errno
    writer = consume file
    guard copy >= 0 else {
      throw .syscall("fcntl", errno: failure, path: path, doing: "flush the key log")
    }
    return DetachedFlush(
      file: FileDescriptor(rawValue: copy, path: path),
      directory: nameUnflushed ? try directory.reopen() : nil, count: counted,
      names: creations)
  }

  /// What ``detachedFlush()`` returns.
  struct DetachedFlush: ~Copyable {
    let file: FileDescriptor
    /// The log's directory, to `fsync` after the file: an append created the file without a
    /// flush since the last one.
    let directory: Directory?
    let count: UInt64
    /// The creations of the file whose names an `fsync` of ``directory`` flushes.
    let names: UInt64
  }

  /// Records that an `fdatasync` which started when ``detachedFlush()`` returned `count`
  /// ended well (followed by an `fsync` of the directory when it returned one): the keys
  /// counted until then are on stable storage.
  mutating func flushed(through count: UInt64, names: UInt64?) {
    if let names { namesFlushed = max(namesFlushed, names) }
    guard !nameUnflushed else { return }
    flushedThrough = max(flushedThrough, min(count, counted))
  }

  /// Writes `records` at the end of the last valid record and flushes them.
  ///
  /// When they do not fit in the zeros already written, the file grows by the records and
  /// ``preallocation`` zero bytes in the same write, and that one flush includes the new
  /// size; the appends after it flush data alone.
  private mutating func append(_ records: [UInt8], flush: Bool, keys: Int)
    throws(ContainerError)
  {
    var bytes = records
    var at = offset
    let created = identity == nil
    if created {
      bytes = KeyLogFormat.header() + bytes
      at = 0
    }
    let end = at + bytes.count
    if end > size { bytes += [UInt8](repeating: 0, count: Self.preallocation) }
    if writer == nil {
      writer = try directory.openFile(fileName, flags: O_RDWR, create: true)
    }
    guard let file = writer.take() else { return }
    try bytes.withUnsafeBytes { buffer in
      Result { () throws(ContainerError) in
        var done = 0
        while done < buffer.count {
          done += try file.call("pwrite", doing: "write") { fd in
            pwrite(fd, buffer.baseAddress! + done, buffer.count - done, off_t(at + done))
          }
        }
      }
    }.get()
    counted += UInt64(keys)
    if created {
      // The log's name must be durable too before the first key counts as recorded: by
      // this flush, or by the one that covers the key.
      creations += 1
      let status: stat
      do {
        status = try file.status()
      } catch {
        writer = consume file
        throw error
      }
      identity = (status.st_dev, status.st_ino)
    }
    if flush {
      do {
        try sync(file)
      } catch {
        writer = consume file
        throw error
      }
      do {
        try flushName()
      } catch {
        writer = consume file
        throw error
      }
      flushedThrough = counted
    }
    size = max(size, at + bytes.count)
    offset = end
    writer = consume file
  }

  /// Rewrites the log with the newest `capacity` keys: temporary file, fsync, rename.
  ///
  /// The older keys are forgotten.
  mutating func compact() throws(ContainerError) {
    let kept = Array(keys.suffix(capacity))
    var bytes = KeyLogFormat.header()
    for key in kept { bytes += KeyLogFormat.record(key) }
    try directory.replaceFile(fileName) { (file) throws(ContainerError) in
      try file.writeAll(bytes)
    }
    guard let status = try directory.status(of: fileName) else { return }
    keys = kept
    members = Set(kept)
    identity = (status.st_dev, status.st_ino)
    offset = bytes.count
    size = bytes.count
    // The newest keys, those written without a flush among them, are in the flushed copy.
    writer = nil
    flushedThrough = counted
    namesFlushed = creations
    poison = nil
  }
}
