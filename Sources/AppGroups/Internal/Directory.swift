import Glibc

/// An open directory that every operation addresses relative to, with `*at` calls.
///
/// Names passed to a `Directory` are single path components: the callers validate them,
/// and every open uses `O_NOFOLLOW`, so no operation can leave the directory or follow
/// a symbolic link.
struct Directory: ~Copyable, Sendable {
  /// The open directory.
  let descriptor: FileDescriptor

  /// The directory's path, for messages and for URLs handed to applications.
  var path: String { descriptor.path }

  init(_ descriptor: consuming FileDescriptor) { self.descriptor = descriptor }

  /// The path of a child, for messages.
  func childPath(_ name: String) -> String { path == "/" ? "/" + name : path + "/" + name }

  /// Opens the root directory.
  static func root() throws(ContainerError) -> Directory {
    let (fd, code) = FileDescriptor.retrying {
      open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }
    guard fd >= 0 else { throw .syscall("open", errno: code, path: "/", doing: "open") }
    return Directory(FileDescriptor(rawValue: fd, path: "/"))
  }

  /// Opens a child directory without following a symbolic link.
  ///
  /// - Parameter searchOnly: open with `O_PATH`, which needs only search permission.
  func openDirectory(_ name: String, searchOnly: Bool = false) throws(ContainerError)
    -> Directory
  {
    let flags = (searchOnly ? openPathOnly : O_RDONLY) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
    let (fd, code) = FileDescriptor.retrying { openat(descriptor.rawValue, name, flags) }
    guard fd >= 0 else {
      throw .syscall("openat", errno: code, path: childPath(name), doing: "open the directory")
    }
    return Directory(FileDescriptor(rawValue: fd, path: childPath(name)))
  }

  /// Opens this directory again: a second descriptor with the same path.
  func reopen() throws(ContainerError) -> Directory {
    let (fd, code) = FileDescriptor.retrying {
      openat(descriptor.rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }
    guard fd >= 0 else { throw .syscall("openat", errno: code, path: path, doing: "reopen") }
    return Directory(FileDescriptor(rawValue: fd, path: path))
  }

  /// Creates a child directory with `mode` unless it exists.
  ///
  /// The C function is `mkdirat`.
  ///
  /// - Returns: `true` when this call created it.
  @discardableResult
  func makeDirectory(_ name: String, mode: mode_t = 0o700) throws(ContainerError) -> Bool {
    let (result, code) = FileDescriptor.retrying { mkdirat(descriptor.rawValue, name, mode) }
    if result == 0 { return true }
    if code == EEXIST { return false }
    throw .syscall("mkdirat", errno: code, path: childPath(name), doing: "create the directory")
  }

  /// Opens (and with `create`, creates with mode 0600) a regular file in this directory.
  func openFile(_ name: String, flags: CInt, create: Bool = false) throws(ContainerError)
    -> FileDescriptor
  {
    let all = flags | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0)
    let (fd, code) = FileDescriptor.retrying { openat(descriptor.rawValue, name, all, 0o600) }
    guard fd >= 0 else {
      throw .syscall("openat", errno: code, path: childPath(name), doing: "open the file")
    }
    return FileDescriptor(rawValue: fd, path: childPath(name))
  }

  /// The status of a child, not following a symbolic link.
  ///
  /// The C function is `fstatat`.
  ///
  /// - Returns: `nil` when the child does not exist.
  func status(of name: String) throws(ContainerError) -> stat? {
    var info = stat()
    let (result, code) = FileDescriptor.retrying {
      fstatat(descriptor.rawValue, name, &info, AT_SYMLINK_NOFOLLOW)
    }
    if result == 0 { return info }
    if code == ENOENT { return nil }
    throw .syscall("fstatat", errno: code, path: childPath(name), doing: "inspect")
  }

  /// Renames a child into `target` (which may be this directory) under `newName`.
  ///
  /// - Parameter replace: when `false`, fails with `EEXIST` instead of replacing.
  /// - Returns: `false` when the source no longer exists (another process moved it).
  @discardableResult
  func rename(
    _ name: String, to target: borrowing Directory, as newName: String, replace: Bool = true
  ) throws(ContainerError) -> Bool {
    let (result, code) = FileDescriptor.retrying {
      renameNoFollow(
        descriptor.rawValue, name, target.descriptor.rawValue, newName, noReplace: !replace)
    }
    if result == 0 { return true }
    if code == ENOENT { return false }
    throw .syscall(
      replace ? "renameat" : "renameat2", errno: code, path: childPath(name), doing: "rename")
  }

  /// Removes a file (or with `directory`, an empty directory).
  ///
  /// Missing children are fine.
  func remove(_ name: String, directory: Bool = false) throws(ContainerError) {
    let (result, code) = FileDescriptor.retrying {
      unlinkat(descriptor.rawValue, name, directory ? AT_REMOVEDIR : 0)
    }
    if result == 0 || code == ENOENT { return }
    throw .syscall("unlinkat", errno: code, path: childPath(name), doing: "remove")
  }

  /// Removes a child directory and the regular files directly inside it.
  func removeTree(_ name: String) throws(ContainerError) {
    let child: Directory
    do { child = try openDirectory(name) } catch  where error.code == .notFound { return }
    for entry in try child.entries() {
      if let info = try child.status(of: entry), info.st_mode & S_IFMT == S_IFDIR {
        try child.removeTree(entry)
      } else {
        try child.remove(entry)
      }
    }
    try remove(name, directory: true)
  }

  /// Removes a child whatever its type: a directory with its files, or a single file.
  func removeItem(_ name: String) throws(ContainerError) {
    guard let info = try status(of: name) else { return }
    if info.st_mode & S_IFMT == S_IFDIR {
      try removeTree(name)
    } else {
      try remove(name)
    }
  }

  /// Calls `body` with the raw bytes of each name in this directory (without `.` and
  /// `..`), without creating strings: for listings that only parse names.
  func forEachRawName(_ body: (UnsafeRawBufferPointer) -> Void) throws(ContainerError) {
    let (fd, code) = FileDescriptor.retrying {
      openat(descriptor.rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }
    guard fd >= 0 else { throw .syscall("openat", errno: code, path: path, doing: "list") }
    guard let stream = fdopendir(fd) else {
      let failure = errno
      close(fd)
      throw .syscall("fdopendir", errno: failure, path: path, doing: "list")
    }
    defer { closedir(stream) }
    while let entry = readdir(stream) {
      let name = Self.name(of: entry)
      if name.count == 1 && name[0] == UInt8(ascii: ".") { continue }
      if name.count == 2 && name[0] == UInt8(ascii: ".") && name[1] == UInt8(ascii: ".") {
        continue
      }
      body(name)
    }
  }

  /// The names in this directory, without `.` and `..`, in no particular order.
  func entries() throws(ContainerError) -> [String] {
    // A fresh open file description, so listings never share a read offset.
    let (fd, code) = FileDescriptor.retrying {
      openat(descriptor.rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }
    guard fd >= 0 else { throw .syscall("openat", errno: code, path: path, doing: "list") }
    guard let stream = fdopendir(fd) else {
      let failure = errno
      close(fd)
      throw .syscall("fdopendir", errno: failure, path: path, doing: "list")
    }
    defer { closedir(stream) }
    var names: [String] = []
    while let entry = readdir(stream) {
      let name = String(decoding: Self.name(of: entry), as: UTF8.self)
      if name != "." && name != ".." { names.append(name) }
    }
    return names
  }

  /// The name in a directory entry `readdir` returned, read in place.
  ///
  /// The kernel packs entries by their real length (`d_reclen`), so an entry near the end
  /// of the buffer can be shorter than `struct dirent`: copying `entry.pointee` would read
  /// past it, and past the mapped page (a crash seen under load). Only the name's own
  /// bytes are read here.
  private static func name(of entry: UnsafeMutablePointer<dirent>) -> UnsafeRawBufferPointer {
    let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19
    let start = UnsafeRawPointer(entry).advanced(by: offset)
    let length = strlen(start.assumingMemoryBound(to: CChar.self))
    return UnsafeRawBufferPointer(start: start, count: length)
  }

  /// Flushes the directory's entries to stable storage.
  func sync() throws(ContainerError) { try descriptor.sync() }

  /// Creates (if needed) and opens a private child directory: owned by this user, a real
  /// directory, not a symbolic link, and not writable by group or others.
  func privateDirectory(_ name: String) throws(ContainerError) -> Directory {
    if try makeDirectory(name) {
      let child = try openDirectory(name)
      // Checked even though this call created it: another user may have swapped it
      // between `mkdirat` and `openat` in a shared parent.
      try child.checkPrivate()
      try child.descriptor.setPermissions(0o700)
      try sync()
      return child
    }
    if let info = try status(of: name), info.st_mode & S_IFMT == S_IFLNK {
      throw .syscall("openat", errno: ELOOP, path: childPath(name), doing: "open the directory")
    }
    let child = try openDirectory(name)
    try child.checkPrivate()
    return child
  }

  /// Checks that this directory is owned by this user and not writable by group or others.
  func checkPrivate() throws(ContainerError) {
    let info = try descriptor.status()
    guard info.st_uid == geteuid() else {
      throw ContainerError(
        code: .untrustedOwner, path: path,
        message: "Refusing to use '\(path)': it is owned by user \(info.st_uid), not by this "
          + "user (\(geteuid())). Remove it or change its owner.")
    }
    guard info.st_mode & 0o022 == 0 else {
      throw ContainerError(
        code: .insecurePermissions, path: path,
        message: "Refusing to use '\(path)': its mode \(String(info.st_mode & 0o7777, radix: 8)) "
          + "lets other users write to it. Run 'chmod go-w' on it (0700 is expected).")
    }
  }
}

/// `O_PATH`, which Glibc's module does not export without `_GNU_SOURCE`: open a directory for use
/// as an `*at` anchor with search permission only.
///
/// Its value is the same on every Linux architecture that Swift supports.
let openPathOnly: CInt = 0o10_000_000

/// `renameat2(2)` with `RENAME_NOREPLACE`, looked up at run time because Glibc's module
/// does not export it; plain `renameat(2)` when replacing is fine.
private func renameNoFollow(
  _ fromDirectory: CInt, _ from: String, _ toDirectory: CInt, _ to: String, noReplace: Bool
) -> CInt {
  guard noReplace else { return renameat(fromDirectory, from, toDirectory, to) }
  guard let renameat2 = renameat2Function else {
    errno = ENOSYS
    return -1
  }
  return renameat2(fromDirectory, from, toDirectory, to, 1)  // RENAME_NOREPLACE
}

private typealias Renameat2 =
  @convention(c) (
    CInt, UnsafePointer<CChar>, CInt, UnsafePointer<CChar>, CUnsignedInt
  ) -> CInt

private let renameat2Function: Renameat2? = {
  guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "renameat2") else {
    return nil
  }
  return unsafeBitCast(symbol, to: Renameat2.self)
}()
