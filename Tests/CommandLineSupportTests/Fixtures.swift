import CommandLineSupport

/// The command descriptions the tests parse against.
enum Fixtures {
  /// swift-argument-parser's `repeat` example, so our output can be compared with the text
  /// AP's own tests expect (`Tests/ArgumentParserExampleTests/RepeatExampleTests.swift`).
  static let repeatCommand = CommandDescription(
    name: "repeat",
    arguments: [ArgumentDescription("phrase", abstract: "The phrase to repeat.")],
    options: [
      .option("--count", value: "count", abstract: "How many times to repeat 'phrase'."),
      .flag("--include-counter", abstract: "Include a counter with each repetition."),
    ])

  /// The output formats of ``watch``.
  enum Format: String, CaseIterable, CommandLineValue {
    case text
    case json
    case verbose
  }

  /// A command shaped like `notify-watch`, with every kind of option.
  static let watch = CommandDescription(
    name: "notify-watch",
    abstract: "Print a line for each notification posted under the given names.",
    discussion: """
      Each delivery is written as soon as it arrives, even when standard output is a pipe. \
      With --timeout, the tool exits with status 2 when the deadline passes first.
      """,
    version: "0.1.0",
    arguments: [
      ArgumentDescription("name", abstract: "A notification name to watch.", isRepeating: true)
    ],
    options: [
      .option("--bus", value: "address", abstract: "The bus to use.", default: "session"),
      .option("--count", "-c", value: "count", abstract: "Exit after this many deliveries."),
      .option("--timeout", "-t", value: "seconds", abstract: "Give up after this long."),
      .option(
        "--prefix", value: "namespace", abstract: "Also watch every name under this prefix.",
        isRepeatable: true),
      .option(
        "--format", value: "format", abstract: "The line format.", choices: Format.self,
        default: .text),
      .option("--state", value: "state", abstract: "Only report this state."),
      .flag("--verbose", "-v", abstract: "Print notifyutil's verbose format.", isRepeatable: true),
      .flag("-q", abstract: "Print nothing."),
      .flag("-dispatch", abstract: "Deliver through a dispatch queue."),
    ],
    exitStatuses: [.init(ExitCode(2), "The timeout passed before the count was reached.")])
}
