public import NotifyServerFiles
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// `notifyd`'s state file on disk: read at start, written atomically (temporary file,
/// `fsync`, `rename`, `fsync` of the directory).
public struct StateStore: Sendable {
  /// The file.
  public let path: String

  /// Uses `path`.
  public init(path: String) { self.path = path }

  /// The default path: `$XDG_STATE_HOME/notifybus/notifyd.state`, else
  /// `$HOME/.local/state/notifybus/notifyd.state`.
  public static var defaultPath: String? {
    if let state = Environment.value("XDG_STATE_HOME"), state.hasPrefix("/") {
      return state + "/notifybus/notifyd.state"
    }
    if let home = Environment.homeDirectory, home.hasPrefix("/") {
      return home + "/.local/state/notifybus/notifyd.state"
    }
    return nil
  }

  /// What loading found.
  public enum Loaded: Sendable {
    /// No file yet.
    case missing
    /// The records of a good file.
    case records([StateRecord])
    /// The file was corrupt: the error, and where the file was moved.
    case corrupt(NotifydFileError, movedTo: String)
  }

  /// Reads the file; a corrupt file is renamed to `<path>.corrupt-<seconds>` so it is
  /// neither used nor overwritten.
  ///
  /// - Throws: ``NotifydFileError`` with code ``NotifydFileError/Code/io`` when the file
  ///   exists but cannot be read or moved aside.
  public func load() throws(NotifydFileError) -> Loaded {
    let bytes: [UInt8]
    switch FileBytes.read(path, limit: 64 << 20) {
    case .success(let read): bytes = read
    case .failure(let code) where code == .noSuchFileOrDirectory: return .missing
    case .failure(let code):
      throw NotifydFileError(.io, path: path, line: 0, "cannot read: \(code)")
    }
    do {
      return .records(try StateFile.parse(bytes, path: path))
    } catch {
      var now = timespec()
      clock_gettime(CLOCK_REALTIME, &now)
      let aside = "\(path).corrupt-\(now.tv_sec)"
      guard rename(path, aside) == 0 else {
        throw NotifydFileError(
          .io, path: path, line: 0,
          "\(error.message); and it cannot be moved aside: \(Errno.current)")
      }
      return .corrupt(error, movedTo: aside)
    }
  }

  /// Writes `records` atomically, creating the directory (mode 0700) if needed.
  ///
  /// - Throws: ``NotifydFileError`` naming the system call that failed.
  public func save(_ records: [StateRecord]) throws(NotifydFileError) {
    let directory = Self.directory(of: path)
    try Self.makeDirectories(directory, path: path)
    let temporary = "\(path).tmp-\(getpid())"
    let bytes = StateFile.serialize(records)
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw fail("open \(temporary)") }
    var offset = 0
    while offset < bytes.count {
      let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
      if written < 0 && errno == EINTR { continue }
      guard written > 0 else {
        let error = fail("write \(temporary)")
        close(fd)
        unlink(temporary)
        throw error
      }
      offset += written
    }
    guard fsync(fd) == 0 else {
      let error = fail("fsync \(temporary)")
      close(fd)
      unlink(temporary)
      throw error
    }
    close(fd)
    guard rename(temporary, path) == 0 else {
      let error = fail("rename \(temporary)")
      unlink(temporary)
      throw error
    }
    let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    if directoryFD >= 0 {
      _ = fsync(directoryFD)
      close(directoryFD)
    }
  }

  private func fail(_ what: String) -> NotifydFileError {
    NotifydFileError(.io, path: path, line: 0, "\(what): \(Errno.current)")
  }

  static func directory(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
  }

  static func makeDirectories(_ directory: String, path: String) throws(NotifydFileError) {
    var current = ""
    for component in directory.split(separator: "/") {
      current += "/" + component
      if mkdir(current, 0o700) != 0 && errno != EEXIST {
        throw NotifydFileError(
          .io, path: path, line: 0, "cannot create \(current): \(Errno.current)")
      }
    }
  }
}
