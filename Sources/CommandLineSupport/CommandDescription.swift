/// What a command-line tool is called, what it does and what it accepts.
///
/// One description drives parsing (``parse(_:)``), the help screen (``helpText(columns:)``),
/// the error messages, the manual page (``manualPage(section:source:)``) and the shell
/// completion scripts (``completionScript(for:)``), so they never drift apart. `-h, --help`
/// and, when there is a ``version``, `--version` are built in, and so are the hidden
/// `--generate-manual-page` and `--generate-completion-script <shell>`. A description may
/// have ``subcommands`` (`readlater watch`) or read Darwin's ``Syntax/ordered`` syntax
/// (notifyutil).
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
  /// Exit statuses beyond 0, 1 and 64, or more precise meanings of those, listed in the
  /// manual page (a status given here replaces the generic meaning of the same code).
  public var exitStatuses: [ExitStatus]
  /// The subcommands, such as `readlater watch` and `readlater list`; when there are any,
  /// the first argument names one and the rest of the line is that subcommand's.
  public private(set) var subcommands: [CommandDescription]
  /// The names of the commands above this one, such as `["readlater"]` for `watch`.
  public private(set) var parentNames: [String] = []
  /// How the command line is read: `getopt_long`'s rules, or Darwin's ordered commands.
  public var syntax: Syntax
  /// The manual section: 1 for user commands, 8 for daemons such as `notifyd`.
  public var manualSection: Int
  /// Environment variables the command reads, for the manual page's ENVIRONMENT section.
  public var environment: [Entry]
  /// Files the command reads or writes, for the manual page's FILES section.
  public var files: [Entry]
  /// Command lines and what they do, for the manual page's EXAMPLES section.
  public var examples: [Entry]
  /// Related manual pages, such as `notifyd(8)`.
  public var seeAlso: [String]

  /// Creates a command description.
  ///
  /// A description is written by the programmer, so mistakes in it trap: two options with
  /// the same name, a name that clashes with `-h`, `--help` or `--version`, or a repeating
  /// argument that is not the last one.
  public init(
    name: String, abstract: String = "", discussion: String = "", version: String? = nil,
    usage: String? = nil, arguments: [ArgumentDescription] = [],
    options: [OptionDescription] = [], exitStatuses: [ExitStatus] = [],
    subcommands: [CommandDescription] = [], syntax: Syntax = .getopt, manualSection: Int = 1,
    environment: [Entry] = [], files: [Entry] = [], examples: [Entry] = [],
    seeAlso: [String] = []
  ) {
    self.name = name
    self.abstract = abstract
    self.discussion = discussion
    self.version = version
    self.usage = usage
    self.arguments = arguments
    self.options = options
    self.exitStatuses = exitStatuses
    self.subcommands = []
    self.syntax = syntax
    self.manualSection = manualSection
    self.environment = environment
    self.files = files
    self.examples = examples
    self.seeAlso = seeAlso
    self.subcommands = subcommands.map { $0.nested(under: self) }
    precondition(
      subcommands.isEmpty || arguments.isEmpty, "A command with subcommands takes no arguments.")
    precondition(
      Set(subcommands.map(\.name)).count == subcommands.count, "Two subcommands share a name.")
    var seen: Set<String> = ["-h", "--help", "--version"]
    for name in options.flatMap(\.names) {
      precondition(seen.insert(name).inserted, "Option name '\(name)' is used twice or reserved.")
    }
    precondition(
      arguments.dropLast().allSatisfy { !$0.isRepeating }, "Only the last argument may repeat.")
    precondition(
      Set(arguments.map(\.name)).count == arguments.count, "Two arguments share a name.")
  }

  /// The hidden option that prints a completion script: `--generate-completion-script bash`.
  public static let completionScriptOption = "--generate-completion-script"
  /// The hidden option that prints the manual page: `--generate-manual-page`.
  public static let manualPageOption = "--generate-manual-page"

  /// The subcommand names from the root to this command, such as `["watch"]`; empty for a
  /// root command.
  public var path: [String] { parentNames.isEmpty ? [] : parentNames.dropFirst() + [name] }

  /// The name as typed, with the commands above it: `readlater watch`.
  public var qualifiedName: String { (parentNames + [name]).joined(separator: " ") }

  /// The subcommand reached by `path`, such as `["watch"]`; this command for an empty path.
  public func subcommand(at path: some Sequence<String>) -> CommandDescription? {
    var command = self
    for name in path {
      guard let next = command.subcommands.first(where: { $0.name == name }) else { return nil }
      command = next
    }
    return command
  }

  /// This command placed below `parent`: it inherits the version, and its own subcommands
  /// learn their new path.
  private func nested(under parent: CommandDescription) -> CommandDescription {
    var copy = self
    copy.parentNames = parent.parentNames + [parent.name]
    if copy.version == nil { copy.version = parent.version }
    copy.subcommands = subcommands.map { $0.nested(under: copy) }
    return copy
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
  /// How a command line is read.
  public enum Syntax: Hashable, Sendable {
    /// `getopt_long`'s rules with swift-argument-parser's messages (`Protocol/cli-conventions.md`
    /// §3): options in any order, clusters, `--name=value`, `--`.
    case getopt
    /// Darwin notifyutil's rules: every argument is an option, read left to right, and the
    /// order is kept in ``ParsedArguments/occurrences``; values are taken whatever they look
    /// like (`-p -x` posts `-x`); an optional value is taken only when it does not start with
    /// `-`; a numbered option such as `-5 key` matches `-<digits>`; no clusters. `-h`, `-help`
    /// and `--help` anywhere ask for help, which is printed in Darwin's layout (standard
    /// error for `-h` and `-help`, as Darwin does; standard output for `--help`).
    case ordered
  }

  /// A term and what it means: an environment variable, a file or an example command.
  public struct Entry: Hashable, Sendable {
    /// The variable, the path or the command line.
    public var term: String
    /// What it is or does, in sentences.
    public var meaning: String

    /// Creates an entry.
    public init(_ term: String, _ meaning: String) {
      self.term = term
      self.meaning = meaning
    }
  }

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
