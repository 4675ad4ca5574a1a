import CommandLineSupport
import Testing

/// A command with subcommands: dispatch, help, usage and errors name the subcommand.
struct SubcommandTests {
  static let command = CommandDescription(
    name: "app", abstract: "An app.", version: "2.0",
    subcommands: [
      CommandDescription(
        name: "watch", abstract: "Watch things.",
        options: [.count("--count", "-n", abstract: "How many.")],
        exitStatuses: [.init(ExitCode(2), "Timed out.")]),
      CommandDescription(
        name: "list", abstract: "List things.", options: [.flag("--json", abstract: "JSON.")]),
    ])

  func outcome(_ arguments: [String]) -> CommandRunner.Outcome {
    CommandRunner(Self.command).outcome { _ = try Self.command.parse(arguments) }
  }

  @Test func dispatchesToTheSubcommand() throws {
    let parsed = try Self.command.parse(["watch", "-n", "3"])
    #expect(parsed.command.name == "watch" && parsed.command.qualifiedName == "app watch")
    #expect(parsed.command.path == ["watch"] && parsed.command.version == "2.0")
    #expect(try parsed.value("--count", as: Count.self)?.value == 3)
    #expect(try Self.command.parse(["list", "--json"]).contains("--json"))
  }

  @Test func helpListsTheSubcommands() {
    let help = outcome(["--help"])
    #expect(help.exitCode == .success)
    #expect(help.text.contains("USAGE: app <subcommand>\n"))
    #expect(help.text.contains("SUBCOMMANDS:\n  watch                   Watch things.\n"))
    #expect(help.text.hasSuffix("  See 'app help <subcommand>' for detailed help.\n\n"))
    let sub = outcome(["help", "watch"])
    #expect(sub.text.contains("USAGE: app watch [--count <n>]\n"), "\(sub.text)")
    #expect(outcome(["watch", "-h"]).text == sub.text)
    #expect(outcome(["--version"]).text == "2.0\n")
  }

  @Test func errorsShowTheSubcommandsUsage() {
    let unknown = outcome(["wacth"])
    #expect(unknown.exitCode == .validationFailure)
    #expect(unknown.text.hasPrefix("Error: Unknown subcommand 'wacth'. Did you mean 'watch'?\n"))
    let bad = CommandRunner(Self.command).outcome {
      _ = try Self.command.parse(["watch", "--count", "0"]).value("--count", as: Count.self)
    }
    #expect(bad.exitCode == .validationFailure)
    #expect(
      bad.text.hasPrefix("Error: The value '0' is invalid for '--count <n>': must be at least 1\n"))
    #expect(bad.text.contains("Usage: app watch [--count <n>]\n  See 'app watch --help'"))
    let missing = outcome([])
    #expect(missing.text.hasPrefix("Error: Missing expected argument '<subcommand>'\n\nOVERVIEW:"))
  }

  @Test func manualPageHasEachStatusOnceAndEverySubcommand() {
    let page = Self.command.manualPage()
    #expect(page.contains(".SH \"APP WATCH\"\n") && page.contains(".SH \"APP LIST\"\n"))
    #expect(page.contains(".B 2\nwatch: Timed out.\n"))
    for code in ["0", "1", "2", "64"] {
      let lines = page.split(separator: "\n")
      #expect(lines.filter { $0 == ".B \(code)" }.count == 1, "status \(code)")
    }
  }
}

/// `Count` and `Timeout`, the helpers every tool's `--count` and `--timeout` use.
struct CountAndTimeoutTests {
  @Test func countIsAPositiveInteger() throws {
    #expect(try Count(commandLineArgument: "1").value == 1)
    for (text, reason) in [
      ("0", "must be at least 1"), ("-2", "must be at least 1"), ("x", "not an integer"),
    ] {
      #expect(throws: ValueConversionError(reason)) { try Count(commandLineArgument: text) }
    }
  }

  @Test func timeoutIsBoundedSeconds() throws {
    #expect(try Timeout(commandLineArgument: "0.25").duration == .milliseconds(250))
    #expect(try Timeout(commandLineArgument: "1e9").duration == .seconds(1_000_000_000))
    for (text, reason) in [
      ("1e300", "must be at most 1000000000 seconds"),
      ("9.3e15", "must be at most 1000000000 seconds"),
      ("-1", "must not be negative"), ("1e400", "out of range"), ("nan", "not a number"),
    ] {
      #expect(throws: ValueConversionError(reason), "\(text)") {
        try Timeout(commandLineArgument: text)
      }
    }
  }
}
