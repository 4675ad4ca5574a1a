/// An error raised by a group container, its shared defaults, its spool or its dedupe sets.
///
/// Every error carries a stable ``code`` to branch on, the ``path`` it concerns, a
/// ``message`` that names what was wrong and how to fix it, and, when a system call
/// failed, the call and its `errno` in ``cause``.
///
/// ```swift
/// do {
///   let container = try GroupContainer(identifier: "group.com.example.reader")
/// } catch let error where error.code == .insecurePermissions {
///   print(error.message)
/// }
/// ```
public struct ContainerError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The stable classification of the error.
  public var code: Code
  /// The file or directory the error concerns, or an empty string when there is none.
  public var path: String
  /// A human description that names what was wrong.
  public var message: String
  /// The failed system call, when one caused the error.
  public var cause: SystemCallError?

  /// Creates an error.
  ///
  /// - Parameters:
  ///   - code: The stable classification.
  ///   - path: The file or directory concerned.
  ///   - message: A human description of what was wrong.
  ///   - cause: The failed system call, if any.
  public init(code: Code, path: String, message: String, cause: SystemCallError? = nil) {
    self.code = code
    self.path = path
    self.message = message
    self.cause = cause
  }

  /// A one-line description: the code, the message and the cause.
  public var description: String {
    var text = "ContainerError(\(code)): \(message)"
    if let cause { text += " (\(cause))" }
    return text
  }

}

extension ContainerError {
  /// A stable classification of a ``ContainerError``.
  ///
  /// This is an open set, in the style of swift-system's `Errno`: compare against the
  /// static members, and expect new ones to appear.
  public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code's stable name.
    public let rawValue: String

    /// Creates a code from its stable name.
    ///
    /// - Parameter rawValue: The stable name, for example `"quotaExceeded"`.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The code's stable name.
    public var description: String { rawValue }

    /// Lets `catch ContainerError.Code.quotaExceeded` match a thrown ``ContainerError``.
    public static func ~= (lhs: Code, rhs: any Error) -> Bool {
      (rhs as? ContainerError)?.code == lhs
    }

    /// A group identifier is not `group.` followed by a reverse-DNS name.
    public static var invalidIdentifier: Code { .init(rawValue: "invalidIdentifier") }
    /// A name (suite, spool, entry id, attachment, dedupe set) is not a safe file name.
    public static var invalidName: Code { .init(rawValue: "invalidName") }
    /// A configured location is relative or contains `.` or `..` components.
    public static var invalidPath: Code { .init(rawValue: "invalidPath") }
    /// A path component is a symbolic link; links are never followed.
    public static var symbolicLink: Code { .init(rawValue: "symbolicLink") }
    /// A path component is not a directory, or a file is not a regular file.
    public static var wrongFileType: Code { .init(rawValue: "wrongFileType") }
    /// A directory or file is owned by another user.
    public static var untrustedOwner: Code { .init(rawValue: "untrustedOwner") }
    /// A directory is writable by its group or by others.
    public static var insecurePermissions: Code { .init(rawValue: "insecurePermissions") }
    /// The location cannot be created or written by this process.
    public static var notWritable: Code { .init(rawValue: "notWritable") }
    /// A file's contents fail validation: bad magic, version, length or checksum.
    public static var corruptFile: Code { .init(rawValue: "corruptFile") }
    /// A value is larger than the per-value limit of shared defaults.
    public static var valueTooLarge: Code { .init(rawValue: "valueTooLarge") }
    /// A value is not a property-list value.
    public static var unsupportedValue: Code { .init(rawValue: "unsupportedValue") }
    /// A spool quota (entry count or bytes) would be exceeded.
    public static var quotaExceeded: Code { .init(rawValue: "quotaExceeded") }
    /// Another consumer is draining the spool and the caller asked not to wait.
    public static var busy: Code { .init(rawValue: "busy") }
    /// A file or directory that must exist does not.
    public static var notFound: Code { .init(rawValue: "notFound") }
    /// A system call failed for a reason not covered by a more specific code.
    public static var ioFailure: Code { .init(rawValue: "ioFailure") }
  }
}

/// A failed system call: its name and the `errno` it set.
public struct SystemCallError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The system call, for example `"openat"`.
  public var systemCall: String
  /// The `errno` value the call set.
  public var errno: CInt

  /// Creates a system-call error.
  ///
  /// - Parameters:
  ///   - systemCall: The name of the call.
  ///   - errno: The `errno` value it set.
  public init(systemCall: String, errno: CInt) {
    self.systemCall = systemCall
    self.errno = errno
  }

  /// For example `'openat' failed with (13) Permission denied`.
  public var description: String {
    "'\(systemCall)' failed with (\(errno)) \(errnoDescription(errno))"
  }
}
