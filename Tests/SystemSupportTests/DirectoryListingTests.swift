import CSystemShim
import SystemSupport
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Listings read with `getdents64` directly (`Directory.forEachRawName`, `entries()`).
struct DirectoryListingTests {
  typealias Listed = Directory<FileSystemError>
  typealias DirectoryLister = SystemSupport.DirectoryLister<FileSystemError>

  private func create(_ name: String, in directory: borrowing Listed) throws {
    _ = try directory.openFile(name, flags: O_WRONLY, create: true, exclusive: true)
  }

  @Test func anEmptyDirectoryListsNothing() throws {
    let scratch = TemporaryDirectory("listing")
    let directory = try Listed.openPrivate(scratch.path)
    #expect(try directory.entries().isEmpty, "'.' and '..' are not listed")
  }

  @Test func namesOfEveryLengthAreListedWhole() throws {
    let scratch = TemporaryDirectory("listing")
    let directory = try Listed.openPrivate(scratch.path)
    var expected: Set<String> = []
    // 1 to NAME_MAX (255) bytes; multi-byte UTF-8 and names that start with dots among them.
    for length in 1...255 {
      let name = String(repeating: "n", count: length)
      expected.insert(name)
      try create(name, in: directory)
    }
    for name in ["é", ".hidden", "...", "..x", "🙂🙂", "a b", "tab\there"] {
      expected.insert(name)
      try create(name, in: directory)
    }
    let listed = try directory.entries()
    #expect(listed.count == expected.count, "each name once")
    #expect(Set(listed) == expected)
  }

  @Test func aDirectoryWithManyEntriesNeedsSeveralReadsAndListsEachOnce() throws {
    let scratch = TemporaryDirectory("listing")
    let directory = try Listed.openPrivate(scratch.path)
    // About 5,000 records of 40 to 100 bytes: several 64 KiB getdents64 reads.
    var expected: Set<String> = []
    for index in 0..<5000 {
      let name = "entry-\(index)-" + String(repeating: "x", count: index % 64)
      expected.insert(name)
      try create(name, in: directory)
    }
    var raw: [[UInt8]] = []
    try directory.forEachRawName { raw.append(Array($0)) }
    #expect(raw.count == expected.count)
    #expect(Set(raw.map { String(decoding: $0, as: UTF8.self) }) == expected)
    #expect(!raw.contains { $0.contains(0) }, "no name carries its terminating NUL")
  }

  @Test func namesThatStayWhileTheDirectoryChangesAreListedOnce() throws {
    let scratch = TemporaryDirectory("listing")
    let directory = try Listed.openPrivate(scratch.path)
    var stable: Set<String> = []
    for index in 0..<3000 {
      let name = "stable-\(index)-" + String(repeating: "s", count: index % 50)
      stable.insert(name)
      try create(name, in: directory)
    }
    var seen: [String: Int] = [:]
    var added = 0
    try directory.forEachRawName { raw in
      let name = String(decoding: raw, as: UTF8.self)
      seen[name, default: 0] += 1
      // Add and remove other names while the listing runs.
      if added < 2000 {
        let extra = "extra-\(added)"
        _ = try? directory.openFile(extra, flags: O_WRONLY, create: true)
        if added % 2 == 0 { try? directory.remove(extra) }
        added += 1
      }
    }
    for name in stable { #expect(seen[name] == 1, "'\(name)' listed \(seen[name] ?? 0) times") }
    #expect(seen.keys.allSatisfy { $0.hasPrefix("stable-") || $0.hasPrefix("extra-") })
    // A listing after the changes sees the final state.
    let after = Set(try directory.entries())
    #expect(after.count == stable.count + 1000)
  }

  @Test func listingARemovedDirectoryFailsWithAnErrorNamingIt() throws {
    let scratch = TemporaryDirectory("listing")
    let parent = try Listed.openPrivate(scratch.path)
    try parent.makeDirectory("gone")
    let gone = try parent.openDirectory("gone")
    try parent.remove("gone", directory: true)
    var caught: FileSystemError?
    do { _ = try gone.entries() } catch { caught = error }
    #expect(caught?.errno == .noSuchFileOrDirectory, "\(String(describing: caught))")
    #expect(caught?.path == scratch.path("gone"))
  }

  // MARK: - A lister kept open

  @Test func aListerRewindsAndSeesEachChangeOnTheNextListing() throws {
    let scratch = TemporaryDirectory("listing")
    let directory = try Listed.openPrivate(scratch.path)
    let lister = DirectoryLister(try directory.reopen())
    #expect(try lister.entries().isEmpty)
    var expected: Set<String> = []
    for round in 0..<3 {
      // Enough names for several getdents64 reads, so a rewind must restart a long read.
      for index in 0..<1500 {
        let name = "r\(round)-\(index)-" + String(repeating: "y", count: index % 80)
        expected.insert(name)
        try create(name, in: directory)
      }
      let listed = try lister.entries()
      #expect(listed.count == expected.count, "round \(round): each name once")
      #expect(Set(listed) == expected)
    }
    for name in expected where name.hasPrefix("r1-") { try directory.remove(name) }
    #expect(Set(try lister.entries()) == expected.filter { !$0.hasPrefix("r1-") })
  }

  @Test func listingsFromSeveralThreadsTakeTurnsAndEachSeesEveryName() async throws {
    let scratch = TemporaryDirectory("listing")
    let directory = try Listed.openPrivate(scratch.path)
    var expected: Set<String> = []
    for index in 0..<2000 {
      let name = "entry-\(index)-" + String(repeating: "t", count: index % 40)
      expected.insert(name)
      try create(name, in: directory)
    }
    let lister = Shared(DirectoryLister(try directory.reopen()))
    let names = expected
    let results = await withTaskGroup(of: Bool.self) { group in
      for _ in 0..<4 {
        group.addTask {
          (0..<5).allSatisfy { _ in
            guard let listed = try? lister.value.entries() else { return false }
            return listed.count == names.count && Set(listed) == names
          }
        }
      }
      return await group.reduce(into: []) { $0.append($1) }
    }
    #expect(results == [true, true, true, true])
  }

  // MARK: - Parsing the kernel's records

  /// One `linux_dirent64` record: header, name, NUL, padding to `length` (8-aligned).
  private func record(_ name: [UInt8], length: Int? = nil) -> [UInt8] {
    let nameOffset = Int(notifybus_dirent64_name_offset)
    let natural = (nameOffset + name.count + 1 + 7) / 8 * 8
    let total = length ?? natural
    // A record claiming more than its natural length is cut there: it runs past the buffer.
    var bytes = [UInt8](repeating: 0, count: max(min(total, natural), nameOffset + name.count))
    let lengthOffset = Int(notifybus_dirent64_reclen_offset)
    bytes[lengthOffset] = UInt8(truncatingIfNeeded: total)
    bytes[lengthOffset + 1] = UInt8(truncatingIfNeeded: total >> 8)
    bytes[Int(notifybus_dirent64_type_offset)] = 8  // DT_REG
    bytes.replaceSubrange(nameOffset..<nameOffset + name.count, with: name)
    return bytes
  }

  private func names(in records: [UInt8]) throws -> [String] {
    var names: [String] = []
    try records.withUnsafeBytes { buffer in
      try Listed.forEachName(in: buffer) { () throws(FileSystemError) in
        throw FileSystemError(
          .systemCall("getdents64", Errno(rawValue: EIO)), path: "/x", action: "list")
      } body: {
        names.append(String(decoding: $0, as: UTF8.self))
      }
    }
    return names
  }

  @Test func parsesWellFormedRecordsIncludingAFullLengthName() throws {
    let long = [UInt8](repeating: UInt8(ascii: "z"), count: 255)
    let bytes = record(Array("a".utf8)) + record(long) + record(Array("é".utf8))
    #expect(try names(in: bytes) == ["a", String(repeating: "z", count: 255), "é"])
    #expect(try names(in: []).isEmpty)
  }

  @Test func aNameThatFillsItsRecordWithoutANulEndsAtTheRecord() throws {
    // No NUL inside the record: the name is cut at the record's end, never read past it.
    let nameOffset = Int(notifybus_dirent64_name_offset)
    let bytes = record(Array("abcdefgh".utf8), length: nameOffset + 8) + record(Array("b".utf8))
    #expect(try names(in: bytes) == ["abcdefgh", "b"])
  }

  @Test(arguments: [0, 4, 19, 4096])
  func aRecordWhoseLengthDoesNotFitIsRejected(length: Int) throws {
    // 0 and 4 would loop or overlap the header, 19 leaves no name, 4096 runs past the buffer.
    let bytes = record(Array("ok".utf8)) + record(Array("bad".utf8), length: length)
    var caught: FileSystemError?
    do { _ = try names(in: bytes) } catch { caught = error as? FileSystemError }
    #expect(caught?.errno == Errno(rawValue: EIO), "\(String(describing: caught))")
  }

  @Test func aBufferEndingInsideARecordHeaderIsRejected() throws {
    let bytes = record(Array("ok".utf8)) + [0, 0, 0, 0]
    #expect(throws: FileSystemError.self) { try names(in: bytes) }
  }
}

/// A noncopyable value shared by reference between tasks.
private final class Shared<Value: ~Copyable & Sendable>: Sendable {
  let value: Value
  init(_ value: consuming Value) { self.value = value }
}
