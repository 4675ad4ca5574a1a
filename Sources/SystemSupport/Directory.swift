import CSystemShim

#if canImport(Glibc)
  package import Glibc
#elseif canImport(Musl)
  package import Musl
#endif

/// An open directory that every operation addresses relative to, with `*at` calls.
///
/// Names passed to a `Directory` are single path components: the callers validate them,
/// and every open uses `O_NOFOLLOW`, so no operation can leave the directory or follow
/// a symbolic link. `Failure` is the error type of the layer that uses it.
package struct Directory<Failure: FileSystemFailure>: ~Copyable, Sendable {
  /// The open directory.
  package let descriptor: FileDescriptor<Failure>

  /// The directory's path, for messages and for URLs handed to applications.
  package var path: String { descriptor.path }

  package init(_ descriptor: consuming FileDescriptor<Failure>) { self.descriptor = descriptor }

  /// The path of a child, for messages.
  package func childPath(_ name: String) -> String {
    path == "/" ? "/" + name : path + "/" + name
  }

  private static func failure(
    _ problem: FileSystemError.Problem, path: String, doing action: String
  ) -> Failure {
    Failure(fileSystem: FileSystemError(problem, path: path, action: action))
  }

  private func failure(_ call: String, _ code: Errno, child name: String, doing action: String)
    -> Failure
  {
    Self.failure(.systemCall(call, code), path: childPath(name), doing: action)
  }

  /// Runs `body`, a system call on a child, retrying on `EINTR`.
  private func call<T: FixedWidthInteger>(
    _ call: String, child name: String, doing action: String, _ body: () -> T
  ) throws(Failure) -> T {
    do {
      return try retryingOnInterrupt(body)
    } catch {
      throw failure(call, error, child: name, doing: action)
    }
  }

  /// Opens the root directory.
  package static func root() throws(Failure) -> Directory {
    do {
      let fd = try retryingOnInterrupt { open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
      return Directory(FileDescriptor(rawValue: fd, path: "/"))
    } catch {
      throw failure(.systemCall("open", error), path: "/", doing: "open")
    }
  }

  /// Opens a child directory without following a symbolic link.
  ///
  /// - Parameter searchOnly: open with `O_PATH`, which needs only search permission.
  package func openDirectory(_ name: String, searchOnly: Bool = false) throws(Failure)
    -> Directory
  {
    do {
      return try openDirectoryOrErrno(name, searchOnly: searchOnly)
    } catch {
      throw failure("openat", error, child: name, doing: "open the directory")
    }
  }

  private func openDirectoryOrErrno(_ name: String, searchOnly: Bool = false) throws(Errno)
    -> Directory
  {
    let flags =
      (searchOnly ? notifybus_o_path : O_RDONLY) | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC
    let fd = try retryingOnInterrupt { openat(descriptor.rawValue, name, flags) }
    return Directory(FileDescriptor(rawValue: fd, path: childPath(name)))
  }

  /// Opens this directory again: a second descriptor with the same path.
  package func reopen() throws(Failure) -> Directory {
    let fd = try descriptor.call("openat", doing: "reopen") {
      openat($0, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }
    return Directory(FileDescriptor(rawValue: fd, path: path))
  }

  /// Creates a child directory with `mode` unless it exists.
  ///
  /// The C function is `mkdirat`.
  ///
  /// - Returns: `true` when this call created it.
  @discardableResult
  package func makeDirectory(_ name: String, mode: mode_t = 0o700) throws(Failure) -> Bool {
    do {
      _ = try retryingOnInterrupt { mkdirat(descriptor.rawValue, name, mode) }
      return true
    } catch {
      if error == .fileExists { return false }
      throw failure("mkdirat", error, child: name, doing: "create the directory")
    }
  }

  /// Opens (and with `create`, creates with mode 0600) a regular file in this directory.
  ///
  /// - Parameter exclusive: with `create`, fail with `EEXIST` when the name exists.
  package func openFile(
    _ name: String, flags: CInt, create: Bool = false, exclusive: Bool = false
  ) throws(Failure) -> FileDescriptor<Failure> {
    let all =
      flags | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0) | (exclusive ? O_EXCL : 0)
    let fd = try call("openat", child: name, doing: "open the file") {
      openat(descriptor.rawValue, name, all, 0o600)
    }
    return FileDescriptor(rawValue: fd, path: childPath(name))
  }

  /// The status of a child, not following a symbolic link.
  ///
  /// The C function is `fstatat`.
  ///
  /// - Returns: `nil` when the child does not exist.
  package func status(of name: String) throws(Failure) -> stat? {
    var info = stat()
    do {
      _ = try retryingOnInterrupt {
        fstatat(descriptor.rawValue, name, &info, AT_SYMLINK_NOFOLLOW)
      }
      return info
    } catch {
      if error == .noSuchFileOrDirectory { return nil }
      throw failure("fstatat", error, child: name, doing: "inspect")
    }
  }

  /// Renames a child into `target` (which may be this directory) under `newName`.
  ///
  /// - Parameter replace: when `false`, fails with `EEXIST` instead of replacing.
  /// - Returns: `false` when the source no longer exists (another process moved it).
  @discardableResult
  package func rename(
    _ name: String, to target: borrowing Directory, as newName: String, replace: Bool = true
  ) throws(Failure) -> Bool {
    let from = descriptor.rawValue
    let to = target.descriptor.rawValue
    do {
      if replace {
        _ = try retryingOnInterrupt { renameat(from, name, to, newName) }
      } else {
        _ = try retryingOnInterrupt { notifybus_rename_noreplace(from, name, to, newName) }
      }
      return true
    } catch {
      if error == .noSuchFileOrDirectory { return false }
      throw failure(replace ? "renameat" : "renameat2", error, child: name, doing: "rename")
    }
  }

  /// Removes a file (or with `directory`, an empty directory).
  ///
  /// Missing children are fine.
  package func remove(_ name: String, directory: Bool = false) throws(Failure) {
    do {
      _ = try retryingOnInterrupt {
        unlinkat(descriptor.rawValue, name, directory ? AT_REMOVEDIR : 0)
      }
    } catch {
      if error == .noSuchFileOrDirectory { return }
      throw failure("unlinkat", error, child: name, doing: "remove")
    }
  }

  /// Removes a child directory and the files directly inside it, recursively.
  package func removeTree(_ name: String) throws(Failure) {
    let child: Directory
    do {
      child = try openDirectoryOrErrno(name)
    } catch {
      if error == .noSuchFileOrDirectory { return }
      throw failure("openat", error, child: name, doing: "open the directory")
    }
    for entry in try child.entries() {
      if let info = try child.status(of: entry), FileType(mode: info.st_mode) == .directory {
        try child.removeTree(entry)
      } else {
        try child.remove(entry)
      }
    }
    try remove(name, directory: true)
  }

  /// Removes a child whatever its type: a directory with its files, or a single file.
  package func removeItem(_ name: String) throws(Failure) {
    guard let info = try status(of: name) else { return }
    if FileType(mode: info.st_mode) == .directory {
      try removeTree(name)
    } else {
      try remove(name)
    }
  }

  /// Calls `body` with the raw bytes of each name in this directory (without `.` and
  /// `..`), without creating strings: for listings that only parse names.
  ///
  /// Reads the entries with `getdents64` directly: a listing costs an `openat`, one
  /// `getdents64` per 64 KiB of entries plus the one that finds the end, and a `close`,
  /// with no `fdopendir` (`fstat`, `fcntl`) or `closedir` around them. A name added or
  /// removed while the listing runs may or may not be in it; every other name is, once.
  package func forEachRawName(_ body: (UnsafeRawBufferPointer) -> Void) throws(Failure) {
    // A fresh open file description, so listings never share a read offset.
    let listing = try descriptor.call("openat", doing: "list") {
      openat($0, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    }
    try Self.readNames(FileDescriptor(rawValue: listing, path: path), body)
  }

  /// Reads every name from `listing`, a directory descriptor at the start of its entries.
  static func readNames(
    _ listing: borrowing FileDescriptor<Failure>, _ body: (UnsafeRawBufferPointer) -> Void
  ) throws(Failure) {
    let capacity = 64 * 1024
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 8)
    defer { buffer.deallocate() }
    while true {
      let count = try listing.call("getdents64", doing: "list") {
        notifybus_getdents64($0, buffer.baseAddress, UInt(capacity))
      }
      if count == 0 { return }
      try forEachName(in: UnsafeRawBufferPointer(rebasing: buffer[0..<count])) {
        () throws(Failure) in
        throw listing.failure("getdents64", Errno(rawValue: EIO), doing: "list")
      } body: { name in
        if name.count == 1 && name[0] == UInt8(ascii: ".") { return }
        if name.count == 2 && name[0] == UInt8(ascii: ".") && name[1] == UInt8(ascii: ".") {
          return
        }
        body(name)
      }
    }
  }

  /// Calls `body` with each name in `records`, the `struct linux_dirent64` records one
  /// `getdents64` returned, read in place; calls `malformed` (which throws) for a record
  /// whose length does not fit.
  package static func forEachName(
    in records: UnsafeRawBufferPointer, malformed: () throws(Failure) -> Never,
    body: (UnsafeRawBufferPointer) -> Void
  ) throws(Failure) {
    let lengthOffset = Int(notifybus_dirent64_reclen_offset)
    let nameOffset = Int(notifybus_dirent64_name_offset)
    var position = 0
    while position < records.count {
      guard records.count - position > nameOffset else { try malformed() }
      let length = Int(
        records.loadUnaligned(fromByteOffset: position + lengthOffset, as: UInt16.self))
      guard length > nameOffset, length <= records.count - position else { try malformed() }
      let start = records.baseAddress! + position + nameOffset
      let room = length - nameOffset
      // The name ends at its NUL; the kernel pads the record to 8 bytes with NULs after it.
      let nameLength = strnlen(start.assumingMemoryBound(to: CChar.self), room)
      body(UnsafeRawBufferPointer(start: start, count: nameLength))
      position += length
    }
  }

  /// The names in this directory, without `.` and `..`, in no particular order.
  package func entries() throws(Failure) -> [String] {
    var names: [String] = []
    try forEachRawName { names.append(String(decoding: $0, as: UTF8.self)) }
    return names
  }

  /// Flushes the directory's entries to stable storage.
  ///
  /// This blocks: from async code, call it off the concurrency pool.
  package func sync() throws(Failure) { try descriptor.sync() }

  /// Checks that this user may write to and search this directory (`faccessat`).
  package func checkWritable() throws(Failure) {
    try descriptor.call("faccessat", doing: "write to") {
      faccessat($0, ".", W_OK | X_OK, AT_EACCESS)
    }
  }
}

// MARK: - Private directories

extension Directory {
  /// Creates (if needed) and opens a private child directory: owned by this user, a real
  /// directory, not a symbolic link, and not writable by group or others.
  package func privateDirectory(_ name: String) throws(Failure) -> Directory {
    if try makeDirectory(name) {
      let child = try openDirectory(name)
      // Checked even though this call created it: another user may have swapped it
      // between `mkdirat` and `openat` in a shared parent.
      try child.checkPrivate()
      try child.descriptor.setPermissions(0o700)
      try sync()
      return child
    }
    if let info = try status(of: name), FileType(mode: info.st_mode) == .symbolicLink {
      throw failure("openat", Errno(rawValue: ELOOP), child: name, doing: "open the directory")
    }
    let child = try openDirectory(name)
    try child.checkPrivate()
    return child
  }

  /// Checks that this directory is owned by this user and not writable by group or others.
  package func checkPrivate() throws(Failure) {
    let info = try descriptor.status()
    guard info.st_uid == geteuid() else {
      throw Self.failure(.foreignOwner(uid: info.st_uid), path: path, doing: "use")
    }
    guard info.st_mode & 0o022 == 0 else {
      throw Self.failure(
        .writableByOthers(mode: UInt32(info.st_mode & 0o7777)), path: path, doing: "use")
    }
  }

  /// `mkdir -p` for private directories: walks the absolute `path` from `/` without
  /// following symbolic links, creating missing components with mode 0700, and opens it.
  ///
  /// Every existing ancestor must be a real directory owned by root or by this user, and
  /// not writable by others unless it has the sticky bit (as `/tmp` does). The last
  /// component, and every component this call creates, must be private: owned by this
  /// user and not writable by group or others.
  ///
  /// - Throws: `Failure` naming the first component that fails.
  package static func openPrivate(_ path: String) throws(Failure) -> Directory {
    guard path.hasPrefix("/") else {
      throw failure(
        .invalidPath("it is not an absolute path"), path: path, doing: "open the directory")
    }
    let components = path.split(separator: "/").map(String.init)
    if let bad = components.first(where: { $0 == "." || $0 == ".." }) {
      throw failure(
        .invalidPath("it contains a '\(bad)' component; give a normalized absolute path"),
        path: path, doing: "open the directory")
    }
    guard !components.isEmpty else {
      throw failure(.invalidPath("it is the root directory"), path: path, doing: "use")
    }
    var current = try Directory.root()
    for (index, name) in components.enumerated() {
      if index == components.count - 1 { return try current.privateDirectory(name) }
      guard let info = try current.status(of: name) else {
        current = try current.privateDirectory(name)
        continue
      }
      switch FileType(mode: info.st_mode) {
      case .directory: break
      case .symbolicLink:
        throw current.failure("openat", Errno(rawValue: ELOOP), child: name, doing: "open")
      default:
        throw current.failure("openat", Errno(rawValue: ENOTDIR), child: name, doing: "open")
      }
      let next: Directory
      do {
        next = try current.openDirectoryOrErrno(name)
      } catch {
        guard error == .permissionDenied else {
          throw current.failure("openat", error, child: name, doing: "open the directory")
        }
        next = try current.openDirectory(name, searchOnly: true)
      }
      try next.checkAncestor()
      current = next
    }
    fatalError("unreachable: the last component returns")
  }

  /// An ancestor must be owned by root or this user, and not writable by others unless
  /// it is sticky.
  private func checkAncestor() throws(Failure) {
    let info = try descriptor.status()
    guard info.st_uid == 0 || info.st_uid == geteuid() else {
      throw Self.failure(
        .foreignOwner(uid: info.st_uid), path: path, doing: "use as part of the path")
    }
    let writableByOthers = info.st_mode & 0o022 != 0
    let sticky = info.st_mode & S_ISVTX != 0
    guard !writableByOthers || sticky else {
      throw Self.failure(
        .writableByOthers(mode: UInt32(info.st_mode & 0o7777)), path: path,
        doing: "use as part of the path")
    }
  }
}

// MARK: - Atomic replacement and unique names

extension Directory {
  /// Replaces (or creates) the file `name` with `bytes`, atomically: readers see the old
  /// file or the new one, never a part, even after a crash.
  ///
  /// The bytes go to a temporary name created with `O_CREAT | O_EXCL | O_NOFOLLOW` (a
  /// random name: a planted file or link there is never written through), with mode
  /// `mode`; the file is flushed (`fsync`), renamed over `name`, and the directory is
  /// flushed. On failure the temporary file is removed and `name` is unchanged.
  ///
  /// This blocks on the flushes: from async code, call it off the concurrency pool.
  package func replaceFile(_ name: String, with bytes: [UInt8], mode: mode_t = 0o600)
    throws(Failure)
  {
    try replaceFile(name, mode: mode) { (file) throws(Failure) in try file.writeAll(bytes) }
  }

  /// Replaces (or creates) the file `name` atomically with what `write` writes to the new
  /// file, by ``replaceFile(_:with:mode:)``'s steps.
  package func replaceFile(
    _ name: String, mode: mode_t = 0o600,
    writing write: (borrowing FileDescriptor<Failure>) throws(Failure) -> Void
  ) throws(Failure) {
    let temporary = try createTemporaryFile(for: name)
    do throws(Failure) {
      try temporary.file.setPermissions(mode)
      try write(temporary.file)
      try temporary.file.sync()
      try rename(temporary.name, to: self, as: name)
    } catch {
      try? remove(temporary.name)
      throw error
    }
    try sync()
  }

  /// Creates a new, empty file with a fresh name `.<name>.tmp-<pid>-<random>`.
  package func createTemporaryFile(for name: String) throws(Failure) -> NewFile<Failure> {
    let flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC
    var attempts = 0
    while true {
      let candidate =
        ".\(name).tmp-\(getpid())-\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
      do {
        let fd = try retryingOnInterrupt { openat(descriptor.rawValue, candidate, flags, 0o600) }
        return NewFile(
          name: candidate, file: FileDescriptor(rawValue: fd, path: childPath(candidate)))
      } catch {
        attempts += 1
        guard error == .fileExists, attempts < 100 else {
          throw failure("openat", error, child: candidate, doing: "create the file")
        }
      }
    }
  }

  /// Moves the child `name` to a name that starts with `base` and is not taken, never
  /// replacing anything: `base`, else `base-2`, `base-3`, ...
  ///
  /// - Returns: The name it was moved to, or `nil` when `name` does not exist.
  package func moveAside(_ name: String, as base: String) throws(Failure) -> String? {
    var suffix = 1
    while true {
      let candidate = suffix == 1 ? base : "\(base)-\(suffix)"
      do {
        _ = try retryingOnInterrupt {
          notifybus_rename_noreplace(descriptor.rawValue, name, descriptor.rawValue, candidate)
        }
        return candidate
      } catch {
        if error == .noSuchFileOrDirectory { return nil }
        guard error == .fileExists, suffix < 10_000 else {
          throw failure("renameat2", error, child: name, doing: "move aside")
        }
        suffix += 1
      }
    }
  }
}

/// A file this process just created, and its name in its directory.
package struct NewFile<Failure: FileSystemFailure>: ~Copyable {
  /// The name in the directory.
  package let name: String
  /// The open file, for writing.
  package let file: FileDescriptor<Failure>
}

// MARK: - Copies

extension Directory {
  /// Copies the regular file at `sourcePath` (``FileDescriptor/openRegularFile(_:)``: a
  /// FIFO or device is refused) into this directory as `name`, mode 0600, replacing an
  /// earlier copy atomically (``replaceFile(_:with:mode:)``'s steps).
  ///
  /// - Parameter limit: The most bytes copied; a larger source is refused.
  package func copyFile(from sourcePath: String, as name: String, limit: Int = .max)
    throws(Failure)
  {
    let source = try FileDescriptor<Failure>.openRegularFile(sourcePath)
    try replaceFile(name) { (file) throws(Failure) in
      var chunk = [UInt8](repeating: 0, count: 256 * 1024)
      var copied = 0
      while true {
        let count = try chunk.withUnsafeMutableBytes { buffer in
          Result { () throws(Failure) in try source.read(into: buffer) }
        }.get()
        if count == 0 { return }
        copied += count
        guard copied <= limit else {
          throw Failure(
            fileSystem: FileSystemError(.tooLarge(limit: limit), path: sourcePath, action: "copy"))
        }
        try chunk.withUnsafeBytes { buffer in
          Result { () throws(Failure) in
            try file.writeAll(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
          }
        }.get()
      }
    }
  }
}
