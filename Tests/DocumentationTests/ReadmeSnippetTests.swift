import SystemSupport
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Every Swift snippet in README.md compiles against the package's modules as written, so
/// a snippet cannot rot.
struct ReadmeSnippetTests {
  static let root = String(#filePath.split(separator: "/").dropLast(3).map { "/" + $0 }.joined())

  /// The text of each ```swift fence, in order.
  static func snippets(in markdown: String) -> [String] {
    var result: [String] = []
    var current: [Substring]?
    for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
      if current == nil, line == "```swift" {
        current = []
      } else if current != nil, line == "```" {
        result.append(current!.joined(separator: "\n") + "\n")
        current = nil
      } else {
        current?.append(line)
      }
    }
    return result
  }

  @Test func theReadmeHasSwiftSnippets() async throws {
    let readme = try #require(readFile(Self.root + "/README.md"))
    #expect(Self.snippets(in: readme).count >= 3)
    #expect(
      Self.snippets(in: "```swift\nlet a = 1\n```\ntext\n```sh\nls\n```\n") == ["let a = 1\n"])
  }

  @Test(arguments: snippetsForArguments())
  func snippetCompiles(_ snippet: Snippet) async throws {
    let directory = try makeDirectory()
    defer { Subprocess.removeTree(directory) }
    let file = directory + "/main.swift"
    writeFile(file, snippet.text)
    let flags = try await Self.moduleFlags()
    let result = try await Products.runCommandAsync(
      "swiftc", ["-typecheck", "-swift-version", "6", file] + flags, timeout: 120)
    #expect(
      result.status == 0,
      "README.md snippet \(snippet.number) does not compile:\n\(snippet.text)\n\(result.error)")
  }

  /// Where the built modules and the C module maps they need are.
  static func moduleFlags() async throws -> [String] {
    var flags = ["-I", Products.directory + "/Modules"]
    // Every C module the Swift modules import: system libraries' module maps in Sources,
    // and those SwiftPM writes for C targets into the build directory.
    let maps = try await Products.runCommandAsync(
      "sh",
      [
        "-c", "ls \"$1\"/Sources/*/module.modulemap \"$2\"/*.build/module.modulemap 2>/dev/null",
        "sh", root, Products.directory,
      ]
    ).output
    for map in maps.split(separator: "\n") {
      let directory = map.split(separator: "/").dropLast().map { "/" + $0 }.joined()
      flags += ["-Xcc", "-fmodule-map-file=\(map)", "-Xcc", "-I\(directory)"]
    }
    let cflags = try await Products.runCommandAsync("pkg-config", ["--cflags", "dbus-1"]).output
    for flag in cflags.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
      flags += ["-Xcc", String(flag)]
    }
    return flags
  }

  /// One snippet, numbered from 1 in README order.
  struct Snippet: CustomTestStringConvertible, Sendable {
    var number: Int
    var text: String
    var testDescription: String { "snippet \(number): \(text.prefix(40))" }
  }

  static func snippetsForArguments() -> [Snippet] {
    guard let readme = readFile(root + "/README.md") else { return [] }
    return snippets(in: readme).enumerated().map {
      Snippet(number: $0.offset + 1, text: $0.element)
    }
  }
}

func makeDirectory() throws -> String {
  var template = Array("/tmp/notifybus-snippet-XXXXXX".utf8CString)
  guard let made = mkdtemp(&template) else { throw Errno.current }
  return String(cString: made)
}
