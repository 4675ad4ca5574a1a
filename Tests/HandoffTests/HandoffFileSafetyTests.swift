import AppGroups
import BusTestSupport
import Foundation
import Handoff
import SystemSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The permission bits and type of `path`, not following a link.
func fileStatus(_ path: String) -> (mode: mode_t, type: mode_t)? {
  var info = stat()
  guard lstat(path, &info) == 0 else { return nil }
  return (info.st_mode & 0o7777, info.st_mode & S_IFMT)
}

/// What the handoff does with files it is handed or that were planted: bounded reads,
/// reported set-asides, no link followed, 0600 files in 0700 directories.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
struct HandoffFileSafetyTests {
  /// A spool entry corrupted on disk, and an undecodable one, are named in the report.
  @Test func theImporterReportsSetAsideAndRejectedEntries() async throws {
    let fixture = try HandoffFixture()
    let container = try fixture.container()
    let spool = try Spool(container: container, name: HandoffSender.defaultSpoolName)
    // With an attachment, the entry is a directory in new/ whose entry file can be damaged.
    try spool.enqueue(
      payload: [UInt8](repeating: 7, count: 100), attachments: [.data(Data([1]), name: "a")],
      id: "flipped")
    let new = spool.path + "/new/"
    let name = try #require(
      try FileManager.default.contentsOfDirectory(atPath: new).first { $0.hasSuffix(".flipped") })
    var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: new + name + "/entry")))
    bytes[70] ^= 0x01
    try Data(bytes).write(to: URL(fileURLWithPath: new + name + "/entry"))
    try spool.enqueue(payload: Array("not an item message".utf8), id: "garbage")
    let good = try await fixture.sender().send([HandoffLibraryTests.item("https://example.com/g")])

    let importer = try await fixture.importer()
    var ids: [String] = []
    let report = try await importer.drainPending { ids.append($0.id) }
    #expect(ids == [good])
    #expect(report.setAside.count == 1)
    #expect(report.setAside.first?.code == .corruptFile)
    #expect(report.setAside.first?.path.contains("/corrupt/") == true)
    #expect(report.rejected == [container.path + "/handoff-rejected/garbage.items"])
    #expect(importer.totals.setAside == report.setAside)
    #expect(importer.totals.rejected == report.rejected)
  }

  /// `readlater watch` prints each set-aside and rejected share and exits 3.
  @Test func readlaterNamesSetAsideSharesAndExitsThree() throws {
    let fixture = try HandoffFixture()
    let spool = try Spool(container: fixture.container(), name: HandoffSender.defaultSpoolName)
    try spool.enqueue(payload: Array("not an item message".utf8), id: "garbage")
    try spool.enqueue(
      payload: [UInt8](repeating: 7, count: 100), attachments: [.data(Data([1]), name: "a")],
      id: "flipped")
    let new = spool.path + "/new/"
    let name = try #require(
      try FileManager.default.contentsOfDirectory(atPath: new).first { $0.hasSuffix(".flipped") })
    #expect(truncate(new + name + "/entry", 40) == 0)
    let result = try fixture.run("readlater", ["watch", "--timeout", "1"], timeout: 60)
    #expect(result.status == 3, "\(result)")
    #expect(result.output.contains("set aside 1 corrupt, rejected 1 undecodable"), "\(result)")
    #expect(result.error.contains("app: set aside a corrupt share: "), "\(result)")
    #expect(result.error.contains("handoff-rejected/garbage.items"), "\(result)")
  }

  /// `handoff-rejected/` replaced by a link to a directory outside the container is refused,
  /// and nothing is written there; the share stays in the spool.
  @Test func aPlantedHandoffRejectedLinkIsNotFollowed() async throws {
    let fixture = try HandoffFixture()
    let container = try fixture.container()
    let outside = fixture.bus.directory + "/outside"
    #expect(mkdir(outside, 0o700) == 0)
    #expect(symlink(outside, container.path + "/handoff-rejected") == 0)
    let spool = try Spool(container: container, name: HandoffSender.defaultSpoolName)
    try spool.enqueue(payload: Array("not an item message".utf8), id: "garbage")
    let importer = try await fixture.importer()
    await #expect(throws: HandoffError.self) { try await importer.drainPending { _ in } }
    #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
    #expect(try fixture.pendingInSpool() == 1)
  }

  /// Under umask 000 and 022 alike, everything the extension and the app create in the
  /// container is 0600 (files) or 0700 (directories): spool, rejected shares, the library,
  /// its attachments.
  @Test(arguments: [0o000, 0o022] as [mode_t])
  func everythingCreatedIsPrivateUnderAnyUmask(_ mask: mode_t) throws {
    let fixture = try HandoffFixture()
    let image = fixture.bus.directory + "/picture.png"
    #expect(
      FileManager.default.createFile(atPath: image, contents: Data([0x89, 0x50, 0x4E, 0x47])))
    let share = try fixture.run(
      "share-extension", ["--url", "https://example.com/m", "--image", image, "--rule", "images"],
      umask: mask)
    #expect(share.status == 0, "\(share)")
    let spool = try Spool(container: fixture.container(), name: HandoffSender.defaultSpoolName)
    try spool.enqueue(payload: Array("not an item message".utf8), id: "garbage")
    let app = try fixture.run("readlater", ["watch", "--timeout", "1"], umask: mask)
    #expect(app.status == 3, "\(app)")
    let root = fixture.groupsDirectory
    let walker = try #require(FileManager.default.enumerator(atPath: root))
    var checked = 0
    for case let relative as String in walker {
      let path = root + "/" + relative
      let status = try #require(fileStatus(path))
      if status.type == S_IFDIR {
        #expect(status.mode == 0o700, "\(path) is \(String(status.mode, radix: 8))")
      } else {
        #expect(status.type == S_IFREG, "\(path)")
        #expect(status.mode == 0o600, "\(path) is \(String(status.mode, radix: 8))")
      }
      checked += 1
    }
    for expected in [
      "/group.example.readlater/handoff-rejected/garbage.items",
      "/group.example.readlater/ReadLater/library.sqlite",
      "/group.example.readlater/ReadLater/Attachments",
    ] {
      #expect(fileStatus(root + expected) != nil, "\(expected) missing")
    }
    #expect(checked > 10)
  }

  /// A link planted for `ReadLater/`, `library.sqlite` or `Attachments` is refused; nothing
  /// is written where it points.
  @Test(arguments: ["ReadLater", "ReadLater/library.sqlite", "ReadLater/Attachments"])
  func readlaterRefusesPlantedLinks(_ planted: String) throws {
    let fixture = try HandoffFixture()
    let container = try fixture.container()
    let outside = fixture.bus.directory + "/outside"
    #expect(mkdir(outside, 0o700) == 0)
    if planted != "ReadLater" { #expect(mkdir(container.path + "/ReadLater", 0o700) == 0) }
    let target = planted.hasSuffix(".sqlite") ? outside + "/library.sqlite" : outside
    #expect(symlink(target, container.path + "/" + planted) == 0)
    let share = try fixture.run("share-extension", ["--url", "https://example.com/l"])
    #expect(share.status == 0, "\(share)")
    let app = try fixture.run("readlater", ["watch", "--timeout", "1"])
    #expect(app.status == 1, "\(app)")
    #expect(app.error.contains("symbolic link"), "\(app)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
    #expect(try fixture.pendingInSpool() == 1)
  }

  /// A FIFO or a device given as `--image` is refused with status 4 (not a regular file),
  /// saying what it is; nothing is stored and nothing waits.
  @Test func aFIFOOrDeviceImageIsRefusedAndNothingIsStored() throws {
    let fixture = try HandoffFixture()
    let fifo = fixture.bus.directory + "/pipe.png"
    #expect(mkfifo(fifo, 0o600) == 0)
    let zero = fixture.bus.directory + "/zero.png"
    #expect(symlink("/dev/zero", zero) == 0)
    for (path, what) in [(fifo, "a FIFO (named pipe)"), (zero, "a character device")] {
      let result = try fixture.run(
        "share-extension",
        ["--url", "https://example.com/f", "--image", path, "--rule", "images"], timeout: 20)
      #expect(result.status == 4, "\(result)")
      #expect(result.error.hasPrefix("Error: --image: "), "\(result)")
      #expect(!result.error.contains("Usage:"), "\(result)")
      #expect(result.error.contains("it is \(what), not a regular file"), "\(result)")
    }
    #expect(try fixture.pendingInSpool() == 0)
    let temporary = try FileManager.default.contentsOfDirectory(
      atPath: fixture.container().path + "/spool/pendingItems/tmp")
    #expect(temporary.isEmpty)
  }

  /// `--manifest /dev/null` says it is a device, not that permission was denied; the
  /// manifest is an option, so this is bad usage (64), not a refused share.
  @Test func aDeviceAsTheManifestIsNamedAsSuch() throws {
    let fixture = try HandoffFixture()
    let result = try fixture.run(
      "share-extension", ["--url", "https://example.com/n", "--manifest", "/dev/null"])
    #expect(result.status == 64, "\(result)")
    #expect(
      result.error.contains("'/dev/null': it is a character device, not a regular file"),
      "\(result)")
    #expect(!result.error.lowercased().contains("permission"), "\(result)")
  }
}
