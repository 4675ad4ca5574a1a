#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Returns the C library's text for an `errno` value.
func errnoDescription(_ code: CInt) -> String {
  guard let text = strerror(code) else { return "unknown error" }
  return String(cString: text)
}

extension ContainerError {
  /// Maps a failed system call on `path` to an error with a fitting code and message.
  ///
  /// See `man 2 openat`, `man 2 mkdirat`, `man 2 renameat`, `man 2 fsync`.
  static func syscall(_ call: String, errno code: CInt, path: String, doing action: String)
    -> ContainerError
  {
    let cause = SystemCallError(systemCall: call, errno: code)
    let reason = errnoDescription(code)
    switch code {
    case ELOOP:
      return .init(
        code: .symbolicLink, path: path,
        message: "Refusing to \(action) '\(path)': it is a symbolic link, and links are never "
          + "followed inside a group container's path. Use the real path instead.",
        cause: cause)
    case ENOTDIR:
      return .init(
        code: .wrongFileType, path: path,
        message: "Unable to \(action) '\(path)': a component of the path is not a directory.",
        cause: cause)
    case EACCES, EPERM, EROFS:
      return .init(
        code: .notWritable, path: path,
        message: "Unable to \(action) '\(path)': \(reason.lowercased()). Check that this user "
          + "owns the location and can write to it.",
        cause: cause)
    case ENOENT:
      return .init(
        code: .notFound, path: path,
        message: "Unable to \(action) '\(path)': no such file or directory.", cause: cause)
    case ENOSPC, EDQUOT:
      return .init(
        code: .notWritable, path: path,
        message: "Unable to \(action) '\(path)': the file system is full (\(reason)).",
        cause: cause)
    default:
      return .init(
        code: .ioFailure, path: path,
        message: "Unable to \(action) '\(path)': \(reason).", cause: cause)
    }
  }

  /// An error for a file whose contents fail validation.
  static func corrupt(_ path: String, _ detail: String) -> ContainerError {
    .init(code: .corruptFile, path: path, message: "Corrupt file '\(path)': \(detail).")
  }
}
