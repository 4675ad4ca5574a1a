import Testing

@testable import CommandLineSupport

struct HelpTests {
  /// The exact text AP's `RepeatExampleTests.repeat_Help` expects from `repeat --help`.
  @Test func matchesArgumentParsersRepeatExample() {
    let outcome = CommandRunner(Fixtures.repeatCommand).outcome(for: CommandLineError.helpRequested)
    #expect(outcome.stream == .standardOutput)
    #expect(outcome.exitCode == .success)
    #expect(
      outcome.text == """
        USAGE: repeat [--count <count>] [--include-counter] <phrase>

        ARGUMENTS:
          <phrase>                The phrase to repeat.

        OPTIONS:
          --count <count>         How many times to repeat 'phrase'.
          --include-counter       Include a counter with each repetition.
          -h, --help              Show help information.


        """)
  }

  @Test func rendersOverviewDefaultsChoicesAndVersion() {
    #expect(
      Fixtures.watch.helpText() == """
        OVERVIEW: Print a line for each notification posted under the given names.

        Each delivery is written as soon as it arrives, even when standard output is a
        pipe. With --timeout, the tool exits with status 2 when the deadline passes
        first.

        USAGE: notify-watch [--bus <address>] [--count <count>] [--timeout <seconds>] [--prefix <namespace> ...] [--format <format>] [--state <state>] [--verbose ...] [-q] [-dispatch] <name> ...

        ARGUMENTS:
          <name>                  A notification name to watch.

        OPTIONS:
          --bus <address>         The bus to use. (default: session)
          -c, --count <count>     Exit after this many deliveries.
          -t, --timeout <seconds> Give up after this long.
          --prefix <namespace>    Also watch every name under this prefix.
          --format <format>       The line format. (values: text, json, verbose;
                                  default: text)
          --state <state>         Only report this state.
          -v, --verbose           Print notifyutil's verbose format.
          -q                      Print nothing.
          -dispatch               Deliver through a dispatch queue.
          --version               Show the version.
          -h, --help              Show help information.

        """)
  }

  @Test func putsTheAbstractOnTheNextLineAfterALongLabel() {
    let command = CommandDescription(
      name: "tool",
      options: [
        .option("--a-very-long-option-name", value: "value", abstract: "Short abstract."),
        .option("--exactly-twenty-four", value: "v", abstract: "Fits."),
        .flag("--undocumented", abstract: ""),
      ])
    #expect(
      command.helpText() == """
        USAGE: tool [--a-very-long-option-name <value>] [--exactly-twenty-four <v>] [--undocumented]

        OPTIONS:
          --a-very-long-option-name <value>
                                  Short abstract.
          --exactly-twenty-four <v>
                                  Fits.
          --undocumented
          -h, --help              Show help information.

        """)
  }

  @Test func wrapsLongAbstractsAtTheLabelColumn() {
    let abstract = String(repeating: "word ", count: 30) + "end."
    let command = CommandDescription(
      name: "tool", options: [.flag("--flag", abstract: abstract)])
    let lines = command.helpText().split(separator: "\n").filter { $0.contains("word") }
    #expect(lines.count == 3)
    #expect(lines.dropLast().allSatisfy { $0.count < 80 } && lines.last!.count <= 80)
    #expect(
      lines.dropFirst().allSatisfy { $0.hasPrefix(String(repeating: " ", count: 26) + "word") })
    #expect(lines[0].hasPrefix("  --flag                  word word"))
  }

  @Test func wrapsAtWidthMinusOneExceptTheLastLine() {
    // AP's rule: a line breaks at the last space within `columns` characters.
    #expect(CommandDescription.wrap("aaaa bbbbb cc", columns: 10) == "aaaa\nbbbbb cc")
    #expect(CommandDescription.wrap("aaaa bbbbb", columns: 10) == "aaaa bbbbb")
    #expect(
      CommandDescription.wrap("unbreakable-word-longer", columns: 5) == "unbreakable-word-longer")
    #expect(CommandDescription.wrap("a\n\nb", columns: 10, indent: 2) == "  a\n\n  b")
  }

  @Test func collapsesManyOptionsInTheUsageLine() {
    let options = (1...13).map { OptionDescription.flag("--flag\($0)", abstract: "") }
    let withArgument = CommandDescription(
      name: "tool", arguments: [ArgumentDescription("file", abstract: "")], options: options)
    #expect(withArgument.usageLine == "tool [<options>] <file>")
    #expect(CommandDescription(name: "tool", options: options).usageLine == "tool <options>")
  }

  @Test func usesACustomUsageWithAHangingIndent() {
    let command = CommandDescription(
      name: "notifyutil", usage: "notifyutil [-q] [-v] [command ...]\nnotifyutil -h")
    #expect(
      command.helpText().hasPrefix(
        "USAGE: notifyutil [-q] [-v] [command ...]\n       notifyutil -h\n"))
    #expect(
      command.usageMessage.hasPrefix(
        "Usage: notifyutil [-q] [-v] [command ...]\n       notifyutil -h\n"))
  }

  @Test func showsOptionalAndRepeatingArguments() {
    let command = CommandDescription(
      name: "tool",
      arguments: [
        ArgumentDescription("first", abstract: ""),
        ArgumentDescription("second", abstract: "", isOptional: true),
        ArgumentDescription("rest", abstract: "", isOptional: true, isRepeating: true),
      ])
    #expect(command.usageLine == "tool <first> [<second>] [<rest> ...]")
  }
}

/// How notifyutil describes its Darwin syntax for the help and the manual page, while
/// the ordered syntax reads its arguments.
struct NotifyutilHelpTests {
  static let notifyutil = CommandDescription(
    name: "notifyutil",
    abstract: "Post, watch and query notifications, as Darwin's notifyutil does.",
    discussion: "Commands run from left to right.",
    version: "0.1.0",
    usage: "notifyutil [-q] [-v] [-z <msec>] [command ...]",
    options: [
      .flag("-q", abstract: "Print nothing when a notification arrives."),
      .flag("-v", abstract: "Print the token, time, name, state and delivery type."),
      .option("-z", value: "msec", abstract: "Pause after each post.", default: "100"),
      .option("-p", value: "key", abstract: "Post a notification for key."),
      .option("-w", value: "key", abstract: "Report every notification for key."),
      OptionDescription(
        names: ["-N"], valueName: "key", abstract: "Report N notifications for key, then stop.",
        label: "-<N> <key>"),
      OptionDescription(
        names: ["-s"], valueName: "key", abstract: "Set the state of key.",
        label: "-s <key> <value>"),
      OptionDescription(
        names: ["-signal", "-sig"], valueName: "signal",
        abstract: "Deliver later registrations by signal.", defaultValue: "1",
        label: "-signal [<signal>]"),
      .flag("-dispatch", abstract: "Deliver later registrations on a dispatch queue."),
    ])

  @Test func rendersIrregularLabels() {
    #expect(
      Self.notifyutil.helpText() == """
        OVERVIEW: Post, watch and query notifications, as Darwin's notifyutil does.

        Commands run from left to right.

        USAGE: notifyutil [-q] [-v] [-z <msec>] [command ...]

        OPTIONS:
          -q                      Print nothing when a notification arrives.
          -v                      Print the token, time, name, state and delivery type.
          -z <msec>               Pause after each post. (default: 100)
          -p <key>                Post a notification for key.
          -w <key>                Report every notification for key.
          -<N> <key>              Report N notifications for key, then stop.
          -s <key> <value>        Set the state of key.
          -signal [<signal>]      Deliver later registrations by signal. (default: 1)
          -dispatch               Deliver later registrations on a dispatch queue.
          --version               Show the version.
          -h, --help              Show help information.

        """)
  }
}
