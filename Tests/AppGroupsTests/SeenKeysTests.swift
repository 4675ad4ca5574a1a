import AppGroups
import Foundation
import Glibc
import TestSupport
import Testing

struct SeenKeysTests {
  @Test func dropsKeysAlreadySeenByAnyInstance() throws {
    let temporary = TemporaryDirectory()
    let seen = try SeenKeys(container: temporary.container(), name: "urls")
    #expect(try seen.insert("https://a.example"))
    #expect(try !seen.insert("https://a.example"))
    let other = try SeenKeys(container: temporary.container(), name: "urls")
    #expect(try other.contains("https://a.example"))
    let urls = ["https://a.example", "https://b.example", "https://b.example", "https://c.example"]
    #expect(try other.filterNew(urls) { $0 } == ["https://b.example", "https://c.example"])
    #expect(try seen.contains("https://c.example"))
    #expect(try mode(of: temporary.container().path + "/dedupe/urls.keys") == 0o600)
  }

  @Test func staysBoundedAndRemembersTheNewest() throws {
    let temporary = TemporaryDirectory()
    let seen = try SeenKeys(container: temporary.container(), name: "bounded", capacity: 10)
    for index in 0..<100 { try seen.insert("k\(index)") }
    let size = try #require(
      try FileManager.default.attributesOfItem(
        atPath: temporary.container().path + "/dedupe/bounded.keys")[.size] as? Int)
    #expect(size < 8 + 21 * 12)
    let fresh = try SeenKeys(container: temporary.container(), name: "bounded", capacity: 10)
    for index in 90..<100 { #expect(try fresh.contains("k\(index)")) }
    #expect(try !fresh.contains("k0"))
  }

  @Test func repairsATornTailAndKeepsWorking() throws {
    let temporary = TemporaryDirectory()
    let seen = try SeenKeys(container: temporary.container(), name: "torn")
    try seen.insert("kept")
    let path = try temporary.container().path + "/dedupe/torn.keys"
    let handle = try #require(FileHandle(forWritingAtPath: path))
    try handle.seekToEnd()
    try handle.write(contentsOf: Data([5, 0, 0, 0, 0x61]))  // an append cut short
    try handle.close()
    let other = try SeenKeys(container: temporary.container(), name: "torn")
    #expect(try other.contains("kept"))
    #expect(try other.insert("after"))
    let again = try SeenKeys(container: temporary.container(), name: "torn")
    #expect(try again.contains("after"))
  }

  @Test func reportsAnUnreadableLogInsteadOfForgetting() throws {
    let temporary = TemporaryDirectory()
    let seen = try SeenKeys(container: temporary.container(), name: "bad")
    try Data("garbage!".utf8).write(
      to: URL(fileURLWithPath: temporary.container().path + "/dedupe/bad.keys"))
    let error = #expect(throws: ContainerError.self) { try seen.insert("x") }
    #expect(error?.code == .corruptFile)
  }
}
