/// What a command-line tool is called, what it does and what it accepts.
///
/// One description drives parsing (``parse(_:)``), the help screen (``helpText(columns:)``),
/// the error messages and the manual page (``manualPage(section:source:)``), so they never
/// drift apart. `-h, --help` and, when there is a ``version``, `--version` are built in.
///
/// ```swift
/// let command = CommandDescription(
///   name: "notify-post",
///   abstract: "Post notifications on the bus.",
///   version: "0.1.0",
///   arguments: [ArgumentDescription("name", abstract: "A name to post.", isRepeating: true)],
///   options: [.option("--state", value: "state", abstract: "Set the name's state first.")])
/// ```
public struct CommandDescription: Hashable, Sendable {
  /// The tool's name as typed, such as `notify-post`.
  public var name: String
  /// One sentence describing the tool, shown after `OVERVIEW:`.
  public var abstract: String
  /// Paragraphs shown after the abstract; blank lines separate paragraphs.
  public var discussion: String
  /// The version `--version` prints, or `nil` for no `--version` option.
  public var version: String?
  /// A usage line that replaces the generated one, for irregular syntax such as notifyutil's.
  public var usage: String?
  /// The positional arguments, in order.
  public var arguments: [ArgumentDescription]
  /// The options and flags, in the order the help lists them.
  public var options: [OptionDescription]
  /// Exit statuses beyond 0, 1 and 64, listed in the manual page.
  public var exitStatuses: [ExitStatus]

  /// Creates a command description.
  ///
  /// A description is written by the programmer, so mistakes in it trap: two options with
  /// the same name, a name that clashes with `-h`, `--help` or `--version`, or a repeating
  /// argument that is not the last one.
  public init(
    name: String, abstract: String = "", discussion: String = "", version: String? = nil,
    usage: String? = nil, arguments: [ArgumentDescription] = [],
    options: [OptionDescription] = [], exitStatuses: [ExitStatus] = []
  ) {
    self.name = name
    self.abstract = abstract
    self.discussion = discussion
    self.version = version
    self.usage = usage
    self.arguments = arguments
    self.options = options
    self.exitStatuses = exitStatuses
    var seen: Set<String> = ["-h", "--help", "--version"]
    for name in options.flatMap(\.names) {
      precondition(seen.insert(name).inserted, "Option name '\(name)' is used twice or reserved.")
    }
    precondition(
      arguments.dropLast().allSatisfy { !$0.isRepeating }, "Only the last argument may repeat.")
    precondition(
      Set(arguments.map(\.name)).count == arguments.count, "Two arguments share a name.")
  }

  /// The built-in `-h, --help` flag.
  public static let helpOption = OptionDescription.flag(
    "-h", "--help", abstract: "Show help information.")

  /// The built-in `--version` flag, present when the command has a ``version``.
  public static let versionOption = OptionDescription.flag(
    "--version", abstract: "Show the version.")

  /// The options as the help lists them: the command's, then `--version`, then `-h, --help`.
  public var allOptions: [OptionDescription] {
    options + (version == nil ? [] : [Self.versionOption]) + [Self.helpOption]
  }
}

extension CommandDescription {
  /// An exit status a tool documents, such as `2` for a timeout.
  public struct ExitStatus: Hashable, Sendable {
    /// The status.
    public var code: ExitCode
    /// When the tool exits with it, as a sentence.
    public var meaning: String

    /// Creates a documented exit status.
    public init(_ code: ExitCode, _ meaning: String) {
      self.code = code
      self.meaning = meaning
    }
  }
}
