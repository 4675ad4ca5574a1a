import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A bounded set of keys persisted as an append-only ``KeyLogFormat`` file.
///
/// Not thread-safe: callers serialize access in the process (a mutex) and across processes
/// (an exclusive `flock`), and call ``refresh()`` after taking the lock.
struct KeyLog: ~Copyable {
  let directory: Directory
  let fileName: String
  let capacity: Int
  private(set) var keys: [String] = []
  private(set) var members: Set<String> = []
  private var identity: (dev_t, ino_t)?
  private var offset = 0

  init(directory: consuming Directory, fileName: String, capacity: Int) {
    self.directory = directory
    self.fileName = fileName
    self.capacity = max(1, capacity)
  }

  var path: String { directory.childPath(fileName) }

  /// Brings the in-memory set up to date with the file.
  ///
  /// Cuts off a torn tail when `repair`.
  mutating func refresh(repair: Bool) throws(ContainerError) {
    guard let info = try directory.status(of: fileName) else {
      keys = []
      members = []
      identity = nil
      offset = 0
      return
    }
    guard info.st_mode & S_IFMT == S_IFREG else {
      throw .syscall("openat", errno: ELOOP, path: path, doing: "open the key log")
    }
    guard info.st_size > 0 else {
      // Created by a writer that was interrupted before it wrote the header.
      keys = []
      members = []
      identity = nil
      offset = 0
      return
    }
    let sameFile = identity.map { $0 == (info.st_dev, info.st_ino) } ?? false
    if sameFile && Int(info.st_size) == offset { return }
    let file = try directory.openFile(fileName, flags: repair ? O_RDWR : O_RDONLY)
    var start = 0
    if sameFile && Int(info.st_size) > offset {
      start = offset
    } else {
      keys = []
      members = []
    }
    try file.seek(to: Int64(start))
    let tail = try file.readToEnd(limit: 64 << 20)
    let bytes: [UInt8]
    let parseFrom: Int
    if start == 0 {
      bytes = tail
      do { try KeyLogFormat.checkHeader(bytes) } catch {
        throw .corrupt(path, error.reason)
      }
      parseFrom = KeyLogFormat.headerSize
    } else {
      bytes = tail
      parseFrom = 0
    }
    let parsed = KeyLogFormat.parseRecords(bytes, from: parseFrom)
    for key in parsed.keys where members.insert(key).inserted { keys.append(key) }
    offset = start + parsed.validLength
    let status = try file.status()
    identity = (status.st_dev, status.st_ino)
    if repair && offset < Int(status.st_size) {
      try file.truncate(to: Int64(offset))
    }
  }

  func contains(_ key: String) -> Bool { members.contains(key) }

  /// Appends the keys that are not yet members, durably.
  ///
  /// Returns which were new.
  mutating func insert(_ newKeys: [String]) throws(ContainerError) -> [Bool] {
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
    let file = try directory.openFile(fileName, flags: O_WRONLY | O_APPEND, create: true)
    if identity == nil {
      records = KeyLogFormat.header() + records
      offset = 0
      try directory.sync()
    }
    try file.writeAll(records)
    try file.syncData()
    let status = try file.status()
    identity = (status.st_dev, status.st_ino)
    offset += records.count
    if keys.count > 2 * capacity { try compact() }
    return added
  }

  /// Rewrites the log with the newest `capacity` keys: temporary file, fsync, rename.
  private mutating func compact() throws(ContainerError) {
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
  }
}
