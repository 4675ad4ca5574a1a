/// A state file or access configuration that cannot be read: what was wrong, and where.
///
/// An open struct in the style of swift-system's `Errno`: ``code`` is stable, ``message``
/// names the file and line.
public struct NotifydFileError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What kind of problem it is.
  public struct Code: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The first line is not the expected header.
    public static let badHeader = Code(rawValue: "bad-header")
    /// A line does not have the fields its kind needs.
    public static let badLine = Code(rawValue: "bad-line")
    /// A notification name is malformed (bad escape, invalid UTF-8, wrong length).
    public static let badName = Code(rawValue: "bad-name")
    /// A number is malformed or out of range.
    public static let badNumber = Code(rawValue: "bad-number")
    /// An access mode is not six characters of the form `rwrwrw` with `-` for a missing right.
    public static let badMode = Code(rawValue: "bad-mode")
    /// A name or prefix appears twice.
    public static let duplicate = Code(rawValue: "duplicate")
    /// The file passes a size or count limit.
    public static let tooLarge = Code(rawValue: "too-large")
    /// A state file's checksum line is missing, malformed or does not match.
    public static let badChecksum = Code(rawValue: "bad-checksum")
    /// A system call failed.
    public static let io = Code(rawValue: "io")
  }

  /// The stable code.
  public var code: Code
  /// The file, as given.
  public var path: String
  /// The 1-based line, or 0 when the problem is not on one line.
  public var line: Int
  /// What was wrong, for people (without the file and line).
  public var reason: String

  /// Creates an error.
  public init(_ code: Code, path: String, line: Int, _ reason: String) {
    self.code = code
    self.path = path
    self.line = line
    self.reason = reason
  }

  /// `path:line: reason`, or `path: reason` when there is no line.
  public var message: String {
    line > 0 ? "\(path):\(line): \(reason)" : "\(path): \(reason)"
  }

  public var description: String { message }
}
