/// The status a NotifyBus tool exits with.
///
/// Every tool shares three codes, the same as swift-argument-parser's: ``success`` (0),
/// ``failure`` (1) for a runtime failure and ``validationFailure`` (64, `EX_USAGE`) for bad
/// usage. Two more `<sysexits.h>` codes are declared here for the tools that refuse their
/// input rather than their command line: ``dataError`` (65) and ``noInput`` (66). A tool adds
/// its own codes in an extension, and documents them in its section of
/// `Protocol/cli-conventions.md` and in its ``CommandDescription/exitStatuses``:
///
/// ```swift
/// extension ExitCode {
///   /// `notify-watch --timeout` passed before `--count` deliveries arrived.
///   static let timedOut = ExitCode(2)
/// }
/// ```
///
/// Throwing an `ExitCode` from a ``CommandRunner`` body exits with that code and prints
/// nothing, so a tool that has already reported its outcome can stop at once.
public struct ExitCode: RawRepresentable, Hashable, Sendable, Error, CustomStringConvertible {
  /// The numeric status passed to `exit(3)`.
  public var rawValue: Int32

  /// Creates an exit code from its numeric status.
  public init(rawValue: Int32) { self.rawValue = rawValue }

  /// Creates an exit code from its numeric status.
  public init(_ rawValue: Int32) { self.rawValue = rawValue }

  /// The tool did what was asked, or printed its help or version.
  ///
  /// The corresponding C constant is `EXIT_SUCCESS`.
  public static let success = ExitCode(0)

  /// The tool could not do what was asked: the bus is unreachable, access was denied, and so on.
  ///
  /// The corresponding C constant is `EXIT_FAILURE`.
  public static let failure = ExitCode(1)

  /// The command line was wrong: an unknown option, a missing or malformed value.
  ///
  /// The corresponding C constant is `EX_USAGE` from `<sysexits.h>`.
  public static let validationFailure = ExitCode(64)

  /// The command line was well formed, but the input it names was refused for what it holds,
  /// such as a share its extension's activation rule does not accept.
  ///
  /// The corresponding C constant is `EX_DATAERR` from `<sysexits.h>`.
  public static let dataError = ExitCode(65)

  /// An input file the command line names does not exist or cannot be read.
  ///
  /// The corresponding C constant is `EX_NOINPUT` from `<sysexits.h>`.
  public static let noInput = ExitCode(66)

  /// Whether this code reports success.
  public var isSuccess: Bool { rawValue == 0 }

  /// The numeric status, for example `64`.
  public var description: String { String(rawValue) }
}
