/// The status a NotifyBus tool exits with.
///
/// Every tool shares three codes, the same as swift-argument-parser's: ``success`` (0),
/// ``failure`` (1) for a runtime failure and ``validationFailure`` (64, `EX_USAGE`) for bad
/// usage. A tool adds its own codes in an extension, and documents them in its section of
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

  /// Whether this code reports success.
  public var isSuccess: Bool { rawValue == 0 }

  /// The numeric status, for example `64`.
  public var description: String { String(rawValue) }
}
