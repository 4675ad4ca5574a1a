import CommandLineSupport
import Foundation
import Testing

/// `Protocol/cli-conventions.md` shows real output: its examples are what the library prints.
struct ConventionsDocumentTests {
  static let document = URL(filePath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
    .appending(path: "Protocol/cli-conventions.md")

  /// The first fenced block after `heading`, with its final newline.
  func example(after heading: String) throws -> String {
    let text = try String(contentsOf: Self.document, encoding: .utf8)
    let section = try #require(text.range(of: heading)).upperBound
    let start = try #require(text.range(of: "```\n", range: section..<text.endIndex)).upperBound
    let end = try #require(text.range(of: "```\n", range: start..<text.endIndex)).lowerBound
    return String(text[start..<end])
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
