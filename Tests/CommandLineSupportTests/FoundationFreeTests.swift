import Foundation
import TestSupport
import Testing

/// `notify-post` must start as fast as a C program, so CommandLineSupport must not pull in
/// Foundation (about 6 ms per process start here).
struct FoundationFreeTests {
  static let sources = URL(filePath: Repository.path("Sources/CommandLineSupport"))

  @Test func sourcesDoNotImportFoundation() throws {
    let files = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path)
      .filter { $0.hasSuffix(".swift") }
    #expect(files.count >= 10)
    let pattern =
      /^\s*(@\w+\s+)*((public|package|internal|fileprivate|private)\s+)?import\s+(\w+\s+)?(Foundation\w*|CoreFoundation)\b/
    for file in files {
      let text = try String(contentsOf: Self.sources.appending(path: file), encoding: .utf8)
      for line in text.split(separator: "\n") {
        #expect(line.firstMatch(of: pattern) == nil, "\(file): \(line)")
      }
    }
  }

  /// The linked executable does not need any Foundation library.
  @Test func executableDoesNotLinkFoundation() throws {
    let binary = try Data(contentsOf: URL(filePath: Products.path("cli-demo")))
    #expect(binary.count > 0)
    for library in [
      "libFoundation", "libFoundationEssentials", "libFoundationInternationalization",
      "lib_FoundationICU",
    ] {
      #expect(binary.range(of: Data(library.utf8)) == nil, "\(library)")
    }
    #expect(binary.range(of: Data("libswiftCore.so".utf8)) != nil)
  }
}
