import Foundation
import FuzzHarnesses
import TestSupport
import Testing

/// The Fuzz/ folder of this checkout.
private let fuzzDirectory = Repository.path("Fuzz")

/// Each harness's seed corpus, run through the harness as `Fuzz/run` would start a fuzzing run:
/// an input that once broke an invariant stays fixed.
@Suite struct CorpusReplayTests {
  @Test("The seed corpus replays through its harness", arguments: fuzzHarnesses.keys.sorted())
  func corpusReplays(_ name: String) throws {
    let corpus = fuzzDirectory + "/" + name + "/corpus"
    let files = try FileManager.default.contentsOfDirectory(atPath: corpus).sorted()
    #expect(!files.isEmpty, "\(corpus) is empty")
    let harness = try #require(fuzzHarnesses[name])
    for file in files {
      harness(try #require(readBytes(corpus + "/" + file), "\(file) does not read"))
    }
  }

  @Test func everyFolderWithACorpusIsAHarness() throws {
    let folders = try FileManager.default.contentsOfDirectory(atPath: fuzzDirectory).filter {
      FileManager.default.fileExists(atPath: fuzzDirectory + "/" + $0 + "/corpus")
    }
    #expect(Set(folders) == Set(fuzzHarnesses.keys))
  }
}
