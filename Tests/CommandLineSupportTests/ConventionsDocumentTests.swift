import CommandLineSupport
import Foundation
import TestSupport
import Testing

/// `Protocol/cli-conventions.md` shows real output: its examples are what the library prints.
struct ConventionsDocumentTests {
  static let document = URL(filePath: Repository.path("Protocol/cli-conventions.md"))

  /// The first fenced block after `heading`, with its final newline.
  func example(after heading: String) throws -> String {
    let text = try String(contentsOf: Self.document, encoding: .utf8)
    let section = try #require(text.range(of: heading)).upperBound
    let start = try #require(text.range(of: "```\n", range: section..<text.endIndex)).upperBound
    let end = try #require(text.range(of: "```\n", range: start..<text.endIndex)).lowerBound
    return String(text[start..<end])
  }

  @Test func helpExampleIsRealOutput() throws {
    let command = CommandDescription(
      name: "notify-watch",
      abstract: "Print a line for each notification posted under the given names.",
      discussion:
        "Each delivery is written as soon as it arrives, even when standard output is a pipe.",
      version: "0.1.0",
      arguments: [
        ArgumentDescription("name", abstract: "A notification name to watch.", isRepeating: true)
      ],
      options: [
        .option("--count", "-c", value: "count", abstract: "Exit after this many deliveries."),
        .option(
          "--prefix", value: "namespace", abstract: "Also watch every name under this prefix.",
          isRepeatable: true),
        .option(
          "--format", value: "format", abstract: "The line format.", default: "text",
          choices: ["text", "json"]),
        .flag("--verbose", "-v", abstract: "Print notifyutil's verbose format."),
      ])
    let outcome = CommandRunner(command).outcome { _ = try command.parse(["--help"]) }
    let documented = try example(after: "## 5. Help layout")
    #expect(outcome.text == documented)
  }

  @Test func errorExampleIsTheRealShape() throws {
    let outcome = CommandRunner(Fixtures.repeatCommand).outcome {
      _ = try Fixtures.repeatCommand.parse(["--count"])
    }
    let shape = try example(after: "## 4. Error format")
    #expect(shape.split(separator: "\n", omittingEmptySubsequences: false).count == 5)
    #expect(
      outcome.text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.prefix(7) }
        == shape.split(separator: "\n", omittingEmptySubsequences: false).map { $0.prefix(7) })
  }
}
