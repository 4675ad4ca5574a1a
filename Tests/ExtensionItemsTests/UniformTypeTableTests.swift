import Foundation
import TestSupport
import Testing

@testable import ExtensionItems

/// The Swift table is generated from `Protocol/uniform-types.json`; they must agree.
struct UniformTypeTableTests {
  @Test func swiftTableMatchesProtocolFile() throws {
    let url = URL(fileURLWithPath: Repository.path("Protocol/uniform-types.json"))
    let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url))
    let root = try #require(object as? [String: Any])
    #expect(root["format"] as? String == "org.notifybus.uniform-types")
    #expect(root["version"] as? Int == UniformTypeDeclaration.systemTableVersion)
    let types = try #require(root["types"] as? [[String: Any]])
    let fromFile = try types.map { entry in
      UniformTypeDeclaration(
        identifier: try #require(entry["identifier"] as? String),
        conformsTo: try #require(entry["conformsTo"] as? [String]),
        filenameExtensions: try #require(entry["filenameExtensions"] as? [String]),
        mimeTypes: try #require(entry["mimeTypes"] as? [String]))
    }
    #expect(fromFile == UniformTypeDeclaration.systemTable)
  }
}
