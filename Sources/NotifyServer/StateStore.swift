public import NotifyServerFiles
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// `notifyd`'s state file on disk: read at start, replaced atomically by SystemSupport's
/// ``SystemSupport/Directory/replaceFile(_:with:mode:)`` (a fresh exclusive temporary name,
/// `fsync`, `rename`, `fsync` of the directory), mode 0600 in a private directory (0700).
public struct StateStore: Sendable {
  /// The file.
  public let path: String
  /// The most records the file may hold: notifyd's `--max-names`, so the reader accepts
  /// everything its writer may write.
  public let maximumRecords: Int

  /// Uses `path`, holding at most `maximumRecords` records.
  public init(path: String, maximumRecords: Int = StateFile.maximumRecords) {
    self.path = path
    self.maximumRecords = maximumRecords
  }

  /// The default path: `$XDG_STATE_HOME/notifybus/notifyd.state`, else
  /// `~/.local/state/notifybus/notifyd.state`.
  public static var defaultPath: String? {
    BaseDirectories().stateHome.map { $0 + "/notifybus/notifyd.state" }
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

  /// The directory and the file name.
  private func location() throws(NotifydFileError) -> (directory: String, name: String) {
    guard path.hasPrefix("/"), let parts = splitFilePath(path) else {
      throw NotifydFileError(.io, path: path, line: 0, "not an absolute path to a file")
    }
    return parts
  }

  /// The state file's directory, created (mode 0700) when missing; never through a
  /// symbolic link, and it must be this user's and not writable by others.
  private func openDirectory(_ path: String) throws(NotifydFileError)
    -> Directory<FileSystemError>
  {
    do {
      return try Directory.openPrivate(path)
    } catch {
      throw failure(error)
    }
  }

  private func failure(_ error: FileSystemError) -> NotifydFileError {
    NotifydFileError(.io, path: path, line: 0, error.description)
  }

  /// Reads the file.
  ///
  /// A corrupt file (bad checksum, bad line, more than ``maximumRecords``
  /// records) is renamed to `<path>.corrupt-<seconds>`, or `…-<seconds>-2` and so on
  /// when that name is taken, so it is neither used nor overwritten.
  ///
  /// - Throws: ``NotifydFileError`` with code ``NotifydFileError/Code/io`` when the file
  ///   exists but cannot be read or moved aside, or is not a regular file.
  public func load() throws(NotifydFileError) -> Loaded {
    let (directoryPath, name) = try location()
    let directory = try openDirectory(directoryPath)
    var bytes: [UInt8] = []
    var tooLarge: Int?
    do throws(FileSystemError) {
      guard try directory.status(of: name) != nil else { return .missing }
      let file = try directory.openFile(name, flags: O_RDONLY | O_NONBLOCK)
      try file.requireRegular(doing: "read the state file")
      do {
        bytes = try file.readToEnd(limit: StateFile.maximumSize(records: maximumRecords))
      } catch {
        guard case .tooLarge(let limit) = error.problem else { throw error }
        tooLarge = limit
      }
    } catch {
      throw failure(error)
    }
    if let limit = tooLarge {
      let reason = NotifydFileError(
        .tooLarge, path: path, line: 0,
        "larger than \(limit) bytes, the most that \(maximumRecords) names (--max-names) take")
      return try moveAside(name, in: directory, because: reason)
    }
    do {
      return .records(try StateFile.parse(bytes, path: path, maximumRecords: maximumRecords))
    } catch {
      return try moveAside(name, in: directory, because: error)
    }
  }

  private func moveAside(
    _ name: String, in directory: borrowing Directory<FileSystemError>,
    because reason: NotifydFileError
  ) throws(NotifydFileError) -> Loaded {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    do {
      guard let aside = try directory.moveAside(name, as: "\(name).corrupt-\(now.tv_sec)") else {
        return .missing
      }
      return .corrupt(reason, movedTo: directory.childPath(aside))
    } catch {
      throw NotifydFileError(
        .io, path: path, line: 0, "\(reason.reason); and it cannot be moved aside: \(error)")
    }
  }

  /// Writes `records` atomically, creating the directory (mode 0700) if needed.
  ///
  /// This blocks on `fsync`: call it off the concurrency pool.
  ///
  /// - Throws: ``NotifydFileError`` naming the system call that failed.
  public func save(_ records: [StateRecord]) throws(NotifydFileError) {
    let (directoryPath, name) = try location()
    let directory = try openDirectory(directoryPath)
    do {
      try directory.replaceFile(name, with: StateFile.serialize(records))
    } catch {
      throw failure(error)
    }
  }
}
