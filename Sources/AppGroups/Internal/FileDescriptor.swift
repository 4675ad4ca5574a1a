import Glibc

/// An owned file descriptor, closed when the value is destroyed.
///
/// The path is kept only to write error messages.
struct FileDescriptor: ~Copyable, Sendable {
  /// The raw descriptor.
  let rawValue: CInt
  /// The path the descriptor was opened at, for messages.
  let path: String

  deinit { _ = Glibc.close(rawValue) }

  /// Runs a system call, retrying while it fails with `EINTR`.
  @inline(__always)
  static func retrying<T: FixedWidthInteger>(_ body: () -> T) -> (T, CInt) {
    while true {
      let result = body()
      if result == -1 {
        let code = errno
        if code == EINTR { continue }
        return (result, code)
      }
      return (result, 0)
    }
  }

  /// The file's status.
  ///
  /// The corresponding C function is `fstat`.
  func status() throws(ContainerError) -> stat {
    var info = stat()
    let (result, code) = Self.retrying { fstat(rawValue, &info) }
    guard result == 0 else {
      throw .syscall("fstat", errno: code, path: path, doing: "inspect")
    }
    return info
  }

  /// Flushes the file's data and metadata to stable storage.
  ///
  /// The C function is `fsync`.
  func sync() throws(ContainerError) {
    let (result, code) = Self.retrying { fsync(rawValue) }
    guard result == 0 else { throw .syscall("fsync", errno: code, path: path, doing: "flush") }
  }

  /// Flushes the file's data, and the metadata needed to read it back (such as its size),
  /// to stable storage.
  ///
  /// Enough for a regular file's contents; directories use ``sync()``. The corresponding C
  /// function is `fdatasync`.
  func syncData() throws(ContainerError) {
    let (result, code) = Self.retrying { fdatasync(rawValue) }
    guard result == 0 else {
      throw .syscall("fdatasync", errno: code, path: path, doing: "flush")
    }
  }

  /// Sets the permission bits.
  ///
  /// The corresponding C function is `fchmod`.
  func setPermissions(_ mode: mode_t) throws(ContainerError) {
    let (result, code) = Self.retrying { fchmod(rawValue, mode) }
    guard result == 0 else {
      throw .syscall("fchmod", errno: code, path: path, doing: "set the permissions of")
    }
  }

  /// Takes an advisory lock on the whole file.
  ///
  /// The corresponding C function is `flock`.
  ///
  /// - Returns: `false` when `wait` is `false` and another process holds the lock.
  func lock(exclusive: Bool, wait: Bool) throws(ContainerError) -> Bool {
    let operation = (exclusive ? LOCK_EX : LOCK_SH) | (wait ? 0 : LOCK_NB)
    let (result, code) = Self.retrying { flock(rawValue, operation) }
    if result == 0 { return true }
    if code == EWOULDBLOCK && !wait { return false }
    throw .syscall("flock", errno: code, path: path, doing: "lock")
  }

  /// Writes all of `bytes`, continuing after short writes.
  ///
  /// The C function is `write`.
  func writeAll(_ bytes: UnsafeRawBufferPointer) throws(ContainerError) {
    var offset = 0
    while offset < bytes.count {
      let (written, code) = Self.retrying {
        write(rawValue, bytes.baseAddress! + offset, bytes.count - offset)
      }
      guard written >= 0 else { throw .syscall("write", errno: code, path: path, doing: "write") }
      offset += written
    }
  }

  /// Writes all of `bytes`.
  func writeAll(_ bytes: [UInt8]) throws(ContainerError) {
    try bytes.withUnsafeBytes { buffer in
      Result { () throws(ContainerError) in try writeAll(buffer) }
    }.get()
  }

  /// Reads up to `buffer.count` bytes.
  ///
  /// The corresponding C function is `read`.
  ///
  /// - Returns: The number of bytes read; zero at the end of the file.
  func read(into buffer: UnsafeMutableRawBufferPointer) throws(ContainerError) -> Int {
    guard buffer.count > 0 else { return 0 }
    let (count, code) = Self.retrying { Glibc.read(rawValue, buffer.baseAddress!, buffer.count) }
    guard count >= 0 else { throw .syscall("read", errno: code, path: path, doing: "read") }
    return count
  }

  /// Reads from the current offset to the end of the file, refusing more than `limit` bytes.
  func readToEnd(limit: Int) throws(ContainerError) -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
      let count = try chunk.withUnsafeMutableBytes { buffer in
        Result { () throws(ContainerError) in try read(into: buffer) }
      }.get()
      if count == 0 { return bytes }
      guard bytes.count + count <= limit else {
        throw .corrupt(path, "the file is larger than the limit of \(limit) bytes")
      }
      bytes.append(contentsOf: chunk[0..<count])
    }
  }

  /// Moves the file offset.
  ///
  /// The corresponding C function is `lseek`.
  func seek(to offset: Int64) throws(ContainerError) {
    let (result, code) = Self.retrying { lseek(rawValue, off_t(offset), SEEK_SET) }
    guard result >= 0 else { throw .syscall("lseek", errno: code, path: path, doing: "seek in") }
  }
}
