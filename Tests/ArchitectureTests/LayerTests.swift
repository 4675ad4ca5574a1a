import Foundation
import TestSupport
import Testing

/// The layers ARCHITECTURE.md declares, held to the sources and to Package.swift.
struct LayerTests {
  /// Each module's layer, from the `layer N  Module ...` lines of ARCHITECTURE.md.
  static let layers: [String: Int] = {
    guard let text = readFile(Repository.path("ARCHITECTURE.md")) else { return [:] }
    var layers: [String: Int] = [:]
    for line in text.split(separator: "\n") {
      let words = line.split(separator: " ")
      guard words.count > 2, words[0] == "layer", let layer = Int(words[1]) else { continue }
      for module in words.dropFirst(2) { layers[String(module)] = layer }
    }
    return layers
  }()

  /// The directory holding a module's sources.
  static func directory(of module: String) -> String? {
    ["Sources/", "Examples/"].map { Repository.path($0 + module) }.first {
      FileManager.default.fileExists(atPath: $0)
    }
  }

  /// The modules a Swift file imports, with their line numbers.
  static func imports(in path: String) -> [(line: Int, module: String)] {
    let pattern =
      /^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:class|struct|enum|protocol|typealias|func|var|let)\s+)?(\w+)/
    let lines = (readFile(path) ?? "").split(separator: "\n", omittingEmptySubsequences: false)
    return lines.enumerated().compactMap { index, line in
      line.firstMatch(of: pattern).map { (index + 1, String($0.1)) }
    }
  }

  @Test func theTableNamesEveryModule() throws {
    #expect(Self.layers.count > 10, "ARCHITECTURE.md has no layer table")
    let modules = try FileManager.default.contentsOfDirectory(atPath: Repository.path("Sources"))
    for module in modules.sorted() {
      #expect(Self.layers[module] != nil, "Sources/\(module) is not in ARCHITECTURE.md's layers")
    }
    for module in Self.layers.keys.sorted() {
      #expect(
        Self.directory(of: module) != nil, "ARCHITECTURE.md names \(module), which has no sources")
    }
  }

  @Test func noModuleImportsItsOwnLayerOrAHigherOne() throws {
    for (module, layer) in Self.layers.sorted(by: { $0.key < $1.key }) {
      guard let directory = Self.directory(of: module),
        let files = FileManager.default.enumerator(atPath: directory)
      else { continue }
      for case let file as String in files where file.hasSuffix(".swift") {
        let path = directory + "/" + file
        for (line, imported) in Self.imports(in: path) {
          guard let importedLayer = Self.layers[imported], imported != module else { continue }
          let relative = path.dropFirst(Repository.root.count + 1)
          #expect(
            importedLayer < layer,
            "\(relative):\(line): \(module) (layer \(layer)) imports \(imported) (layer \(importedLayer))"
          )
        }
      }
    }
  }

  @Test func packageSwiftDeclaresTheLibrariesLowestLayerFirst() throws {
    let manifest = try #require(readFile(Repository.path("Package.swift")))
    let declared = manifest.matches(
      of: /\.(?:target|systemLibrary|executableTarget)\(\s*name: "([\w-]+)"/
    )
    .map { String($0.1) }.filter { Self.layers[$0] != nil }
    #expect(declared.count == Self.layers.count, "\(Set(Self.layers.keys).subtracting(declared))")
    for (first, next) in zip(declared, declared.dropFirst()) {
      let (firstLayer, nextLayer) = (Self.layers[first] ?? 0, Self.layers[next] ?? 0)
      #expect(
        firstLayer <= nextLayer,
        "Package.swift declares \(next) (layer \(nextLayer)) after \(first) (layer \(firstLayer))")
    }
  }
}
