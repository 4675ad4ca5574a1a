import CommandLineSupport
import Testing

struct CommandRunnerTests {
  let repeatRunner = CommandRunner(Fixtures.repeatCommand)

  /// The outcome of running `repeat` with `arguments` and a body that converts `--count`.
  func repeatOutcome(_ arguments: [String]) -> CommandRunner.Outcome {
    repeatRunner.outcome {
      let parsed = try Fixtures.repeatCommand.parse(arguments)
      _ = try parsed.value("--count", as: Int.self)
    }
  }

  /// The texts AP's `RepeatExampleTests.repeat_Fail` expects, byte for byte.
  ///
  /// AP reads `--count` while parsing, so its invalid-value message has no reason; ours adds one.
  @Test func matchesArgumentParsersErrorOutput() {
    let usage = """
      Usage: repeat [--count <count>] [--include-counter] <phrase>
        See 'repeat --help' for more information.

      """
    let expectations: [([String], String)] = [
      (
        ["hello", "--count"],
        """
        Error: Missing value for '--count <count>'
        Help:  --count <count>  How many times to repeat 'phrase'.

        """ + usage
      ),
      (
        ["hello", "--count", "ZZZ"],
        """
        Error: The value 'ZZZ' is invalid for '--count <count>': not an integer
        Help:  --count <count>  How many times to repeat 'phrase'.

        """ + usage
      ),
      (["--version", "hello"], "Error: Unknown option '--version'\n" + usage),
      (
        [],
        """
        Error: Missing expected argument '<phrase>'

        USAGE: repeat [--count <count>] [--include-counter] <phrase>

        ARGUMENTS:
          <phrase>                The phrase to repeat.

        OPTIONS:
          --count <count>         How many times to repeat 'phrase'.
          --include-counter       Include a counter with each repetition.
          -h, --help              Show help information.


        """
      ),
    ]
    for (arguments, expected) in expectations {
      let outcome = repeatOutcome(arguments)
      #expect(outcome.text == expected, "\(arguments)")
      #expect(outcome.stream == .standardError)
      #expect(outcome.exitCode == .validationFailure)
    }
  }

  @Test func reportsAMissingArgumentWithItsHelpLine() {
    #expect(
      repeatOutcome(["--count", "2"]).text == """
        Error: Missing expected argument '<phrase>'
        Help:  <phrase>  The phrase to repeat.
        Usage: repeat [--count <count>] [--include-counter] <phrase>
          See 'repeat --help' for more information.

        """)
  }

  @Test func printsTheVersionOnStandardOutput() {
    let outcome = CommandRunner(Fixtures.watch).outcome {
      _ = try Fixtures.watch.parse(["--version"])
    }
    #expect(outcome == .init(exitCode: .success, stream: .standardOutput, text: "0.1.0\n"))
  }

  @Test func reportsAToolsValidationError() {
    let outcome = repeatRunner.outcome { throw CommandLineError.validation("Invalid name 'a..b'.") }
    #expect(outcome.exitCode == .validationFailure)
    #expect(outcome.text.hasPrefix("Error: Invalid name 'a..b'.\nUsage: repeat "))
  }

  struct BusUnreachable: Error, CustomStringConvertible {
    var description: String { "The session bus is unreachable." }
  }

  @Test func mapsEveryOutcomeToItsExitCode() {
    let timedOut = ExitCode(2)
    let cases: [(any Error, ExitCode, CommandRunner.Outcome.Stream, String)] = [
      (
        CommandLineError.helpRequested, .success, .standardOutput,
        Fixtures.repeatCommand.helpText() + "\n"
      ),
      (CommandLineError.versionRequested, .success, .standardOutput, "Unspecified version\n"),
      (BusUnreachable(), .failure, .standardError, "Error: The session bus is unreachable.\n"),
      (timedOut, timedOut, .standardError, ""),
      (ExitCode.validationFailure, .validationFailure, .standardError, ""),
    ]
    for (error, code, stream, text) in cases {
      let outcome = repeatRunner.outcome(for: error)
      #expect(outcome.exitCode == code, "\(error)")
      #expect(outcome.stream == stream, "\(error)")
      #expect(outcome.text == text, "\(error)")
    }
    #expect(repeatRunner.outcome {} == .success)
  }

  @Test func runsAsynchronousBodies() async {
    let outcome = await repeatRunner.asyncOutcome {
      await Task.yield()
      throw BusUnreachable()
    }
    #expect(outcome.exitCode == .failure)
  }

  @Test func exposesTheStandardCodes() {
    #expect(ExitCode.success.rawValue == 0 && ExitCode.success.isSuccess)
    #expect(ExitCode.failure.rawValue == 1 && !ExitCode.failure.isSuccess)
    #expect(ExitCode.validationFailure.rawValue == 64)
    #expect(ExitCode(rawValue: 64) == .validationFailure)
    #expect("\(ExitCode(124))" == "124")
  }
}
