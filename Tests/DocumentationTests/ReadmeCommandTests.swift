import TestSupport
import Testing

/// The README sends users to the tools, never to the test suite's helper programs that
/// share the build directory with them.
struct ReadmeCommandTests {
  static let root = ReadmeSnippetTests.root

  /// The executable targets Package.swift declares, each with whether it lives in Tests/.
  static func executableTargets(in manifest: String) -> [(name: String, isTestHelper: Bool)] {
    manifest.split(separator: ".executableTarget(", omittingEmptySubsequences: false).dropFirst()
      .compactMap { text in
        let declaration = text.prefix { $0 != ")" }
        guard let name = quoted(after: "name: ", in: declaration) else { return nil }
        let path = quoted(after: "path: ", in: declaration) ?? "Sources/" + name
        return (name, path.hasPrefix("Tests/"))
      }
  }

  /// The names of Package.swift's executable products.
  static func executableProducts(in manifest: String) -> Set<String> {
    Set(
      manifest.split(separator: ".executable(", omittingEmptySubsequences: false).dropFirst()
        .compactMap {
          quoted(after: "name: ", in: $0.prefix { $0 != ")" })
        })
  }

  static func quoted(after key: String, in text: Substring) -> String? {
    guard let start = text.firstRange(of: key + "\"")?.upperBound,
      let end = text[start...].firstIndex(of: "\"")
    else { return nil }
    return String(text[start..<end])
  }

  @Test func theReadmeNamesNoTestHelperAndRunsOnlyProducts() throws {
    let readme = try #require(readFile(Self.root + "/README.md"))
    let manifest = try #require(readFile(Self.root + "/Package.swift"))
    let targets = Self.executableTargets(in: manifest)
    let helpers = targets.filter(\.isTestHelper).map(\.name)
    #expect(helpers.contains("dbus-test-peer") && helpers.contains("cli-demo"), "\(targets)")
    let products = Self.executableProducts(in: manifest)
    #expect(products.contains("notify-watch") && !products.contains("dbus-test-peer"))

    let words = readme.split(whereSeparator: { " \n`()\"'".contains($0) })
    for helper in helpers {
      #expect(!words.contains(Substring(helper)), "README.md names the test helper \(helper)")
    }
    // `swift run [-c CONFIGURATION] NAME` runs a product (a placeholder such as TOOL aside).
    var runs: [String] = []
    for index in words.indices.dropFirst()
    where words[index] == "run" && words[index - 1] == "swift" {
      var next = index + 1
      if next < words.count, words[next] == "-c" { next += 2 }
      guard next < words.count else { continue }
      if !words[next].allSatisfy(\.isUppercase) { runs.append(String(words[next])) }  // TOOL
    }
    #expect(!runs.isEmpty, "the README runs no tool with swift run")
    for name in runs {
      #expect(products.contains(name), "README.md runs \(name), which is not a product")
    }
    // The build directory mixes the tools with the helpers: no place to send users.
    let intoBuildDirectory = readme.contains(".build/debug")
    #expect(!intoBuildDirectory, "README.md sends users into .build/debug")
  }
}
