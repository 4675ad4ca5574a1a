#if canImport(Glibc)
  package import Glibc
#elseif canImport(Musl)
  package import Musl
#endif

/// Why a file-system operation failed: what was wrong, the path, and what was being done.
///
/// Each layer above wraps it in its own error type through ``FileSystemFailure``, keeping
/// ``problem`` for branching and ``description`` as the message.
package struct FileSystemError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What was wrong.
  package enum Problem: Hashable, Sendable {
    /// A system call failed.
    case systemCall(String, Errno)
    /// The file holds more than the reader accepts.
    case tooLarge(limit: Int)
    /// The path names something other than the regular file (or directory) expected.
    case wrongType(FileType, expected: FileType)
    /// The file or directory belongs to another user.
    case foreignOwner(uid: UInt32)
    /// The directory is writable by its group or by others.
    case writableByOthers(mode: UInt32)
    /// The path is not one the operation accepts (relative, `..`, empty).
    case invalidPath(String)
  }

  /// What was wrong.
  package var problem: Problem
  /// The file or directory concerned.
  package var path: String
  /// What was being done, as a verb phrase: "open", "read", "create the directory".
  package var action: String

  /// Creates an error.
  package init(_ problem: Problem, path: String, action: String) {
    self.problem = problem
    self.path = path
    self.action = action
  }

  /// The `errno` of a failed system call, else `nil`.
  package var errno: Errno? {
    if case .systemCall(_, let code) = problem { return code }
    return nil
  }

  /// A sentence naming the path, the action and the problem.
  package var description: String {
    switch problem {
    case .systemCall(let call, let code):
      if code.rawValue == ELOOP {
        return "cannot \(action) '\(path)': it is a symbolic link, which is never followed"
      }
      return "cannot \(action) '\(path)': \(call): \(code)"
    case .tooLarge(let limit):
      return "cannot \(action) '\(path)': it is larger than the limit of \(limit) bytes"
    case .wrongType(let type, let expected):
      return "cannot \(action) '\(path)': it is \(type), not \(expected)"
    case .foreignOwner(let uid):
      return "refusing to \(action) '\(path)': it is owned by user \(uid), not by this user "
        + "(\(geteuid()))"
    case .writableByOthers(let mode):
      return "refusing to \(action) '\(path)': its mode \(String(mode, radix: 8)) lets other "
        + "users write to it (0700 is expected)"
    case .invalidPath(let reason):
      return "cannot \(action) '\(path)': \(reason)"
    }
  }
}

/// An error type that a layer above SystemSupport throws for file-system failures.
///
/// SystemSupport's file types are generic over it, so a layer's code throws its own typed
/// error without converting at every call.
package protocol FileSystemFailure: Error {
  /// Wraps a file-system failure.
  init(fileSystem error: FileSystemError)
}

extension FileSystemError: FileSystemFailure {
  package init(fileSystem error: FileSystemError) { self = error }
}

/// The type of a file system object, from `st_mode`.
package enum FileType: Hashable, Sendable, CustomStringConvertible {
  case regular, directory, symbolicLink, fifo, characterDevice, blockDevice, socket, unknown

  /// The type in `mode`'s `S_IFMT` bits.
  package init(mode: mode_t) {
    switch mode & S_IFMT {
    case S_IFREG: self = .regular
    case S_IFDIR: self = .directory
    case S_IFLNK: self = .symbolicLink
    case S_IFIFO: self = .fifo
    case S_IFCHR: self = .characterDevice
    case S_IFBLK: self = .blockDevice
    case S_IFSOCK: self = .socket
    default: self = .unknown
    }
  }

  /// With an article: "a FIFO (named pipe)", "a character device".
  package var description: String {
    switch self {
    case .regular: "a regular file"
    case .directory: "a directory"
    case .symbolicLink: "a symbolic link"
    case .fifo: "a FIFO (named pipe)"
    case .characterDevice: "a character device"
    case .blockDevice: "a block device"
    case .socket: "a socket"
    case .unknown: "a file of unknown type"
    }
  }
}
