/// Why a command line was refused, or a request for help or the version.
///
/// The ``message`` names what was wrong and the offending text, in swift-argument-parser's
/// words, for example `Missing value for '--count <count>'` or
/// `The value '-3' is invalid for '--count <count>': must not be negative`.
/// ``CommandRunner`` prints it as `Error: <message>`, then the ``help`` line if there is one,
/// then the usage, and exits with ``ExitCode/validationFailure``.
///
/// Tools throw their own usage errors with ``validation(_:)``:
///
/// ```swift
/// guard let name = NotifyName(text) else {
///   throw CommandLineError.validation("Invalid name '\(text)': names are 1 to 511 bytes.")
/// }
/// ```
public struct CommandLineError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What kind of problem this is; stable across releases.
  public var code: Code
  /// A human message naming the option or argument and the offending text.
  public var message: String
  /// The `Help:` line: the option's label and abstract, when that helps fix the mistake.
  public var help: String?
  /// Whether the runner shows the full help instead of the short usage: the command line
  /// was empty, so the user probably does not know the tool yet.
  public var showsFullHelp: Bool
  /// The subcommand the error is about, such as `["watch"]`, so its usage is shown; set
  /// while parsing.
  public var commandPath: [String] = []
  /// Whether a help request prints on standard error (notifyutil's `-h`, as Darwin's does).
  var helpGoesToStandardError = false

  /// Creates an error from its parts.
  public init(_ code: Code, message: String, help: String? = nil, showsFullHelp: Bool = false) {
    self.code = code
    self.message = message
    self.help = help
    self.showsFullHelp = showsFullHelp
  }

  /// A usage error found by the tool itself, such as an invalid notification name.
  ///
  /// The runner prints it with the usage and exits with ``ExitCode/validationFailure``.
  public static func validation(_ message: String) -> CommandLineError {
    CommandLineError(.validationFailed, message: message)
  }

  /// The user asked for help with `-h` or `--help`.
  public static let helpRequested = CommandLineError(.helpRequested, message: "")

  /// The user asked for the version with `--version`.
  public static let versionRequested = CommandLineError(.versionRequested, message: "")

  /// The message, without the `Error: ` prefix.
  public var description: String { message }

  /// Whether this is a request for help or the version rather than a mistake.
  public var isCleanExit: Bool {
    [.helpRequested, .versionRequested, .completionScriptRequested, .manualPageRequested]
      .contains(code)
  }
}

extension CommandLineError {
  /// The kind of a ``CommandLineError``: an open set in the style of swift-system's `Errno`.
  public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The stable name of the code, for example `unknownOption`.
    public var rawValue: String

    /// Creates a code from its stable name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `-h` or `--help` was given.
    public static let helpRequested = Code(rawValue: "helpRequested")
    /// `--version` was given.
    public static let versionRequested = Code(rawValue: "versionRequested")
    /// An option the command does not have, such as `--cuont`.
    public static let unknownOption = Code(rawValue: "unknownOption")
    /// An option that takes a value came last, or before another option.
    public static let missingValue = Code(rawValue: "missingValue")
    /// A flag was given a value with `--flag=value`.
    public static let unexpectedValue = Code(rawValue: "unexpectedValue")
    /// A value could not be converted, or is not one of the option's choices.
    public static let invalidValue = Code(rawValue: "invalidValue")
    /// A required positional argument is missing.
    public static let missingArgument = Code(rawValue: "missingArgument")
    /// More positional arguments than the command accepts.
    public static let unexpectedArgument = Code(rawValue: "unexpectedArgument")
    /// The tool refused a well-formed command line, for example an invalid name.
    public static let validationFailed = Code(rawValue: "validationFailed")

    /// A subcommand the command does not have, such as `readlater lsit`.
    public static let unknownSubcommand = Code(rawValue: "unknownSubcommand")
    /// An argument is not valid UTF-8.
    public static let invalidEncoding = Code(rawValue: "invalidEncoding")
    /// `--generate-completion-script <shell>` was given; the message is the shell.
    public static let completionScriptRequested = Code(rawValue: "completionScriptRequested")
    /// `--generate-manual-page` was given.
    public static let manualPageRequested = Code(rawValue: "manualPageRequested")

    /// The stable name of the code.
    public var description: String { rawValue }
  }
}
