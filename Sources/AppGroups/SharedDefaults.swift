import Foundation
import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Key-value defaults shared by the processes of an App Group, like
/// `UserDefaults(suiteName:)` on Apple systems.
///
/// The values live in the container at `preferences/<suite>.plist`, a binary property list.
///
/// - **Reads see every process's latest write**, without `synchronize()`: each read checks
///   the file's change stamp (device, inode, size, modification and change times) with one
///   `fstatat` and re-reads the file when it changed. Writers replace the file by rename,
///   so a reader sees either the old or the new file, never a mix.
/// - **Writes are atomic and serialized across processes**: a write takes an exclusive
///   `flock` on `preferences/<suite>.lock` (held only during the write), re-reads the
///   latest file, applies the change, writes a temporary file, fsyncs it, renames it over
///   the old one and fsyncs the directory. Concurrent writers never lose each other's keys.
/// - **Values are capped**: a value whose ``PropertyListValue/contentSize`` is 4 MiB or
///   more is refused with ``ContainerError/Code/valueTooLarge``, as Apple refuses them.
///   Keep large bytes in spool attachments or files.
/// - **A corrupt file is an error, never silently replaced**: reads and writes throw
///   ``ContainerError/Code/corruptFile`` until ``removePersistentDomain()`` is called.
/// - **Changes by any process** are reported by ``changes(pollingEvery:)``.
///
/// Unlike `UserDefaults`, accessors throw: the store is a shared file, and an unreadable
/// or corrupt file must not look like a missing value.
///
/// ```swift
/// let defaults = try SharedDefaults(suiteName: "group.com.example.reader")
/// try defaults.set("dark", forKey: "theme")
/// let theme = try defaults.string(forKey: "theme")
/// ```
public final class SharedDefaults: Sendable {
  /// The container holding the defaults.
  public let container: GroupContainer
  /// The suite's name; the file is `preferences/<suiteName>.plist`.
  public let suiteName: String

  /// The per-value size limit, 4 MiB: values of this size or more are refused.
  public static var maximumValueSize: Int { 4 * 1024 * 1024 }

  let directory: Directory
  let fileName: String
  private let lockName: String
  private let state = Mutex(State())

  /// The change stamp of a defaults file.
  struct Stamp: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: Int64
    var changed: Int64

    init(_ info: stat) {
      device = UInt64(info.st_dev)
      inode = UInt64(info.st_ino)
      size = Int64(info.st_size)
      modified = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
      changed = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
    }
  }

  struct State: Sendable {
    var stamp: Stamp?
    var values: [String: PropertyListValue] = [:]
    var registered: [String: PropertyListValue] = [:]
  }

  /// Opens the defaults of a group, in the group's container, as Apple's
  /// `UserDefaults(suiteName: "group.…")` does.
  ///
  /// - Parameter suiteName: The group identifier, for example `group.com.example.reader`.
  /// - Throws: ``ContainerError`` when the identifier is invalid or the container unusable.
  public convenience init(suiteName: String) throws(ContainerError) {
    try self.init(container: GroupContainer(identifier: suiteName))
  }

  /// Opens a suite of defaults in a container.
  ///
  /// - Parameters:
  ///   - container: The group container.
  ///   - suiteName: A portable name (letters, digits, `.`, `_`, `-`); the container's
  ///     identifier when `nil`.
  /// - Throws: ``ContainerError`` for an invalid name or an unusable directory.
  public init(container: GroupContainer, suiteName: String? = nil) throws(ContainerError) {
    let suite = suiteName ?? container.identifier.rawValue
    try SafeName.checkPortable(suite, kind: "suite name", limit: 200)
    self.container = container
    self.suiteName = suite
    self.fileName = suite + ".plist"
    self.lockName = suite + ".lock"
    self.directory = try container.privateDirectory(["preferences"])
  }

  /// The defaults file's path.
  public var path: String { directory.childPath(fileName) }

  // MARK: - Core

  /// The persisted values as of now, re-reading the file if another process changed it.
  func currentValues() throws(ContainerError) -> [String: PropertyListValue] {
    try state.withLock { (state) throws(ContainerError) in
      try refresh(&state)
      return state.values
    }
  }

  /// The persisted values merged over the registered ones.
  func effectiveValues() throws(ContainerError) -> [String: PropertyListValue] {
    try state.withLock { (state) throws(ContainerError) in
      try refresh(&state)
      return state.registered.merging(state.values) { $1 }
    }
  }

  /// Re-reads the file when its stamp differs from the cached one.
  private func refresh(_ state: inout State) throws(ContainerError) {
    guard let info = try directory.status(of: fileName) else {
      state.stamp = nil
      state.values = [:]
      return
    }
    if let stamp = state.stamp, stamp == Stamp(info) { return }
    let file: FileDescriptor
    do {
      file = try directory.openFile(fileName, flags: O_RDONLY)
    } catch {
      if error.code != .notFound { throw error }
      state.stamp = nil
      state.values = [:]
      return
    }
    let opened = try file.status()
    guard opened.st_mode & S_IFMT == S_IFREG else {
      throw ContainerError.corrupt(path, "it is not a regular file")
    }
    let bytes = try file.readToEnd(limit: 1 << 30)
    do {
      state.values = try DefaultsFile.decode(bytes)
    } catch {
      throw ContainerError(
        code: .corruptFile, path: path,
        message: "The shared defaults file '\(path)' is corrupt: \(error.reason). It was left "
          + "untouched; inspect or move it, or call removePersistentDomain() to start over.")
    }
    state.stamp = Stamp(opened)
  }

  /// Applies `body` to the latest values under the cross-process write lock and writes
  /// the result atomically and durably.
  func update(_ body: (inout [String: PropertyListValue]) throws(ContainerError) -> Void)
    throws(ContainerError)
  {
    let lock = try directory.openFile(lockName, flags: O_RDWR, create: true)
    _ = try lock.lock(exclusive: true, wait: true)
    try state.withLock { (state) throws(ContainerError) in
      try refresh(&state)
      var values = state.values
      try body(&values)
      guard values != state.values else { return }
      let bytes: [UInt8]
      do {
        bytes = try DefaultsFile.encode(values)
      } catch {
        throw ContainerError(
          code: .unsupportedValue, path: path, message: "The values cannot be stored: \(error)")
      }
      let old = state.stamp
      try directory.replaceFile(fileName) { (file) throws(ContainerError) in
        try file.writeAll(bytes)
        try distinguish(file, from: old)
      }
      state.values = values
      // Under the lock, the file at the name is the one just written (its change time
      // includes the rename).
      state.stamp = try directory.status(of: fileName).map(Stamp.init)
    }
  }

  /// Makes sure readers can tell the new file from the old one by its stamp.
  ///
  /// The file system may give the new file the inode number the old one just freed, with
  /// the same size and, within the clock's granularity, the same times. Then the new file's
  /// modification time is set one nanosecond past the old one's.
  private func distinguish(_ file: borrowing FileDescriptor, from old: Stamp?)
    throws(ContainerError)
  {
    guard let old else { return }
    let new = Stamp(try file.status())
    guard new.inode == old.inode, new.device == old.device, new.size == old.size,
      new.modified <= old.modified
    else { return }
    let next = old.modified + 1
    try file.setTimes([
      timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2),  // UTIME_OMIT: leave the access time
      timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000)),
    ])
  }

  /// Checks a value against the per-value limit.
  func checkSize(_ value: PropertyListValue, forKey key: String) throws(ContainerError) {
    let size = value.contentSize + key.utf8.count
    guard size < Self.maximumValueSize else {
      throw ContainerError(
        code: .valueTooLarge, path: path,
        message: "The value for key '\(key)' is \(size) bytes; shared defaults refuse values "
          + "of \(Self.maximumValueSize) bytes (4 MiB) or more. Store large data in a spool "
          + "attachment or a file in the container and keep only its name here.")
    }
  }

  /// Adds values used when a key has no persisted value, in this process only.
  ///
  /// Registered defaults are never written to the file, exactly like `UserDefaults`.
  ///
  /// - Parameter defaults: The fallback values.
  public func register(defaults: [String: PropertyListValue]) {
    state.withLock { $0.registered.merge(defaults) { $1 } }
  }

  /// Deletes the defaults file, including a corrupt one, under the write lock.
  ///
  /// - Throws: ``ContainerError`` when the file cannot be removed.
  public func removePersistentDomain() throws(ContainerError) {
    let lock = try directory.openFile(lockName, flags: O_RDWR, create: true)
    _ = try lock.lock(exclusive: true, wait: true)
    try directory.remove(fileName)
    try directory.sync()
    state.withLock {
      $0.values = [:]
      $0.stamp = nil
    }
  }

  /// The file's current change stamp, or `nil` when there is no file.
  func currentStamp() throws(ContainerError) -> Stamp? {
    try directory.status(of: fileName).map(Stamp.init)
  }
}
