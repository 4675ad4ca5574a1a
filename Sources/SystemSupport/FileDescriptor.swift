#if canImport(Glibc)
  package import Glibc
#elseif canImport(Musl)
  package import Musl
#endif

/// An owned file descriptor, closed when the value is destroyed.
///
/// `Failure` is the error type the layer using it throws; the path is kept only to write
/// error messages. Every call retries on `EINTR` (``retryingOnInterrupt(_:)``).
package struct FileDescriptor<Failure: FileSystemFailure>: ~Copyable, Sendable {
  /// The raw descriptor.
  package let rawValue: CInt
  /// The path the descriptor was opened at, for messages.
  package let path: String

  /// Takes ownership of `rawValue`.
  package init(rawValue: CInt, path: String) {
    self.rawValue = rawValue
    self.path = path
  }

  deinit { _ = systemClose(rawValue) }

  /// The error for a failed call on this descriptor.
  package func failure(_ call: String, _ code: Errno, doing action: String) -> Failure {
    Failure(fileSystem: FileSystemError(.systemCall(call, code), path: path, action: action))
  }

  /// Runs `body` (a system call on this descriptor), retrying on `EINTR`.
  ///
  /// - Throws: `Failure` naming `call` and `action`.
  @discardableResult
  package func call<T: FixedWidthInteger>(
    _ call: String, doing action: String, _ body: (CInt) -> T
  ) throws(Failure) -> T {
    do {
      return try retryingOnInterrupt { body(rawValue) }
    } catch {
      throw failure(call, error, doing: action)
    }
  }

  /// Opens an input file given by path, refusing anything but a regular file.
  ///
  /// A FIFO, a device, a socket or a directory is refused with a message that says what
  /// it is; the open itself does not block (`O_NONBLOCK`) and does not make a terminal the
  /// controlling one. Symbolic links are followed: the path is the user's choice.
  package static func openRegularFile(_ path: String) throws(Failure) -> FileDescriptor {
    let fd: CInt
    do {
      fd = try retryingOnInterrupt { open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) }
    } catch {
      throw Failure(
        fileSystem: FileSystemError(.systemCall("open", error), path: path, action: "open"))
    }
    let file = FileDescriptor(rawValue: fd, path: path)
    try file.requireRegular(doing: "read")
    // Regular files ignore O_NONBLOCK; cleared all the same, so reads behave as usual.
    let flags = try file.call("fcntl", doing: "open") { fcntl($0, F_GETFL) }
    try file.call("fcntl", doing: "open") { fcntl($0, F_SETFL, flags & ~O_NONBLOCK) }
    return file
  }

  /// Opens an output file given by path for writing from its start: created with mode
  /// 0600 when missing, truncated when it is a regular file, never through a symbolic link
  /// at `path` (`O_NOFOLLOW`); a FIFO or a device is refused without blocking.
  package static func openOutputFile(_ path: String) throws(Failure) -> FileDescriptor {
    let flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC
    let fd: CInt
    do {
      fd = try retryingOnInterrupt { open(path, flags, 0o600) }
    } catch {
      throw Failure(
        fileSystem: FileSystemError(.systemCall("open", error), path: path, action: "open"))
    }
    let file = FileDescriptor(rawValue: fd, path: path)
    try file.requireRegular(doing: "write")
    try file.truncate(to: 0)
    let current = try file.call("fcntl", doing: "open") { fcntl($0, F_GETFL) }
    try file.call("fcntl", doing: "open") { fcntl($0, F_SETFL, current & ~O_NONBLOCK) }
    return file
  }

  /// Reads a whole input file of at most `limit` bytes (see ``openRegularFile(_:)``).
  package static func readRegularFile(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
    let file = try openRegularFile(path)
    return try file.readToEnd(limit: limit)
  }

  /// Checks that this descriptor is a regular file.
  package func requireRegular(doing action: String) throws(Failure) {
    let type = FileType(mode: try status().st_mode)
    guard type == .regular else {
      throw Failure(
        fileSystem: FileSystemError(
          .wrongType(type, expected: .regular), path: path, action: action))
    }
  }

  /// The file's status.
  ///
  /// The corresponding C function is `fstat`.
  package func status() throws(Failure) -> stat {
    var info = stat()
    try call("fstat", doing: "inspect") { fstat($0, &info) }
    return info
  }

  /// Flushes the file's data and metadata to stable storage.
  ///
  /// This blocks: from async code, call it off the concurrency pool. The C function is
  /// `fsync`.
  package func sync() throws(Failure) { try call("fsync", doing: "flush") { fsync($0) } }

  /// Flushes the file's data, and the metadata needed to read it back (such as its size),
  /// to stable storage.
  ///
  /// Enough for a regular file's contents; directories use ``sync()``. The corresponding C
  /// function is `fdatasync`.
  package func syncData() throws(Failure) {
    try call("fdatasync", doing: "flush") { fdatasync($0) }
  }

  /// Sets the permission bits.
  ///
  /// The corresponding C function is `fchmod`.
  package func setPermissions(_ mode: mode_t) throws(Failure) {
    try call("fchmod", doing: "set the permissions of") { fchmod($0, mode) }
  }

  /// Truncates (or extends) the file to `size` bytes.
  ///
  /// The corresponding C function is `ftruncate`.
  package func truncate(to size: Int64) throws(Failure) {
    try call("ftruncate", doing: "truncate") { ftruncate($0, off_t(size)) }
  }

  /// Sets the access and modification times.
  ///
  /// The corresponding C function is `futimens`.
  package func setTimes(_ times: [timespec]) throws(Failure) {
    var times = times
    try call("futimens", doing: "set the times of") { futimens($0, &times) }
  }

  /// Takes an advisory lock on the whole file.
  ///
  /// Waiting blocks: from async code, call it off the concurrency pool. The corresponding
  /// C function is `flock`.
  ///
  /// - Returns: `false` when `wait` is `false` and another process holds the lock.
  package func lock(exclusive: Bool, wait: Bool) throws(Failure) -> Bool {
    let operation = (exclusive ? LOCK_EX : LOCK_SH) | (wait ? 0 : LOCK_NB)
    do {
      _ = try retryingOnInterrupt { flock(rawValue, operation) }
      return true
    } catch {
      if error.rawValue == EWOULDBLOCK && !wait { return false }
      throw failure("flock", error, doing: "lock")
    }
  }

  /// Releases the advisory lock.
  package func unlock() { _ = flock(rawValue, LOCK_UN) }

  /// Writes all of `bytes`, continuing after short writes.
  ///
  /// The C function is `write`.
  package func writeAll(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
    var offset = 0
    while offset < bytes.count {
      offset += try call("write", doing: "write") {
        systemWrite($0, bytes.baseAddress! + offset, bytes.count - offset)
      }
    }
  }

  /// Writes all of `bytes`.
  package func writeAll(_ bytes: [UInt8]) throws(Failure) {
    try bytes.withUnsafeBytes { buffer in
      Result { () throws(Failure) in try writeAll(buffer) }
    }.get()
  }

  /// Reads up to `buffer.count` bytes.
  ///
  /// The corresponding C function is `read`.
  ///
  /// - Returns: The number of bytes read; zero at the end of the file.
  package func read(into buffer: UnsafeMutableRawBufferPointer) throws(Failure) -> Int {
    guard buffer.count > 0 else { return 0 }
    return try call("read", doing: "read") { systemRead($0, buffer.baseAddress!, buffer.count) }
  }

  /// Reads from the current offset to the end of the file, refusing more than `limit` bytes.
  ///
  /// - Throws: `Failure` with ``FileSystemError/Problem/tooLarge(limit:)`` past the limit.
  package func readToEnd(limit: Int) throws(Failure) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
      let count = try chunk.withUnsafeMutableBytes { buffer in
        Result { () throws(Failure) in try read(into: buffer) }
      }.get()
      if count == 0 { return bytes }
      guard bytes.count + count <= limit else {
        throw Failure(
          fileSystem: FileSystemError(.tooLarge(limit: limit), path: path, action: "read"))
      }
      bytes.append(contentsOf: chunk[0..<count])
    }
  }

  /// Writes all of `bytes` at `offset`, continuing after short writes, without moving the
  /// file offset.
  ///
  /// The C function is `pwrite`.
  package func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(Failure) {
    var done = 0
    while done < bytes.count {
      done += try call("pwrite", doing: "write") {
        pwrite($0, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
      }
    }
  }

  /// Writes all of `bytes` at `offset` (see ``writeAll(_:at:)-(UnsafeRawBufferPointer,_)``).
  package func writeAll(_ bytes: [UInt8], at offset: Int64) throws(Failure) {
    try bytes.withUnsafeBytes { buffer in
      Result { () throws(Failure) in try writeAll(buffer, at: offset) }
    }.get()
  }

  /// Reads up to `count` bytes at `offset` without moving the file offset, continuing
  /// after short reads until `count` bytes or the end of the file.
  ///
  /// The C function is `pread`.
  ///
  /// - Returns: The bytes read; fewer than `count` only at the end of the file.
  package func read(count: Int, at offset: Int64) throws(Failure) -> [UInt8] {
    guard count > 0 else { return [] }
    var bytes = [UInt8](repeating: 0, count: count)
    let filled = try bytes.withUnsafeMutableBytes { buffer in
      Result { () throws(Failure) -> Int in
        var filled = 0
        while filled < count {
          let got = try call("pread", doing: "read") {
            pread($0, buffer.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
          }
          if got == 0 { break }
          filled += got
        }
        return filled
      }
    }.get()
    bytes.removeLast(count - filled)
    return bytes
  }

  /// Moves the file offset.
  ///
  /// The corresponding C function is `lseek`.
  package func seek(to offset: Int64) throws(Failure) {
    try call("lseek", doing: "seek in") { lseek($0, off_t(offset), SEEK_SET) }
  }
}
