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
    // Bounded: at most twice the capacity in records, plus the zeros written ahead.
    let bytes = try [UInt8](
      Data(contentsOf: URL(fileURLWithPath: temporary.container().path + "/dedupe/bounded.keys")))
    let records = KeyLogFormat.parseRecords(bytes, from: KeyLogFormat.headerSize)
    #expect(records.validLength < 8 + 21 * 12)
    #expect(size <= records.validLength + 12 + 64 * 1024)
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

  @Test func appendsIntoZerosWrittenAheadWithoutGrowingTheFile() throws {
    let temporary = TemporaryDirectory()
    let seen = try SeenKeys(container: temporary.container(), name: "ahead")
    let path = try temporary.container().path + "/dedupe/ahead.keys"
    try seen.insert("first")
    let size = try fileBytes(path).count
    #expect(size > 8 + 4 + 5 + 4)
    let other = try SeenKeys(container: temporary.container(), name: "ahead")
    for index in 0..<50 { #expect(try (index % 2 == 0 ? seen : other).insert("k\(index)")) }
    let bytes = try fileBytes(path)
    #expect(bytes.count == size, "appends that fit must not change the size")
    let parsed = KeyLogFormat.parseRecords(bytes, from: KeyLogFormat.headerSize)
    #expect(parsed.keys == ["first"] + (0..<50).map { "k\($0)" })
    #expect(bytes[parsed.validLength...].allSatisfy { $0 == 0 })
    let fresh = try SeenKeys(container: temporary.container(), name: "ahead")
    for index in 0..<50 { #expect(try fresh.contains("k\(index)")) }
  }

  @Test func repairsAnAppendTornInsideTheZerosWrittenAhead() throws {
    let temporary = TemporaryDirectory()
    let seen = try SeenKeys(container: temporary.container(), name: "torn-ahead")
    let path = try temporary.container().path + "/dedupe/torn-ahead.keys"
    try seen.insert("kept")
    let valid = KeyLogFormat.parseRecords(try fileBytes(path), from: 8).validLength
    // A record whose length made it to disk but whose key and checksum did not.
    let handle = try #require(FileHandle(forWritingAtPath: path))
    try handle.seek(toOffset: UInt64(valid))
    try handle.write(contentsOf: Data([9, 0, 0, 0, 0x41, 0x42]))
    try handle.close()
    let other = try SeenKeys(container: temporary.container(), name: "torn-ahead")
    #expect(try other.contains("kept"))
    #expect(try other.insert("after"))
    let again = try SeenKeys(container: temporary.container(), name: "torn-ahead")
    #expect(try again.contains("kept"))
    #expect(try again.contains("after"))
    let parsed = KeyLogFormat.parseRecords(try fileBytes(path), from: 8)
    #expect(parsed.keys == ["kept", "after"])
  }

  @Test func readsAndExtendsALogWrittenWithoutZerosAhead() throws {
    let temporary = TemporaryDirectory()
    let directory = try temporary.container().path + "/dedupe"
    try FileManager.default.createDirectory(
      atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    // What an earlier version wrote: the header and records, ending at the last record.
    let earlier = KeyLogFormat.header() + KeyLogFormat.record("one") + KeyLogFormat.record("two")
    try Data(earlier).write(to: URL(fileURLWithPath: directory + "/old.keys"))
    let seen = try SeenKeys(container: temporary.container(), name: "old")
    #expect(try seen.contains("one"))
    #expect(try seen.contains("two"))
    #expect(try seen.insert("three"))
    let parsed = KeyLogFormat.parseRecords(try fileBytes(directory + "/old.keys"), from: 8)
    #expect(parsed.keys == ["one", "two", "three"])
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

private func fileBytes(_ path: String) throws -> [UInt8] {
  try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
}
