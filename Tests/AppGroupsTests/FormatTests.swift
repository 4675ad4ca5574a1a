import Foundation
import TestSupport
import Testing

@testable import AppGroups

struct SpoolEntryFormatTests {
  let sample = SpoolEntryFormat.encode(
    enqueueTime: 1_700_000_000_000_000, id: "entry-1",
    attachments: [.init(name: "photo.jpg", size: 3, checksum: 0x1234_5678)],
    payload: Array("payload bytes".utf8))

  @Test func roundTrips() throws {
    let decoded = try SpoolEntryFormat.decode(sample)
    #expect(decoded.id == "entry-1")
    #expect(decoded.enqueueTime == 1_700_000_000_000_000)
    #expect(decoded.attachments == [.init(name: "photo.jpg", size: 3, checksum: 0x1234_5678)])
    #expect(Array(decoded.payload) == Array("payload bytes".utf8))
  }

  /// The test vector in Protocol/container.md, produced independently with Python's
  /// `struct` and `zlib.crc32`.
  @Test func matchesTheProtocolTestVector() {
    let hex =
      "4e4253450100000000401e18240a060007000100000000000d000000000000007497106e656e7472792d3109"
      + "0070686f746f2e6a70670300000000000000785634127061796c6f6164206279746573cc6be949"
    let bytes = stride(from: 0, to: hex.count, by: 2).map { offset in
      let start = hex.index(hex.startIndex, offsetBy: offset)
      return UInt8(hex[start..<hex.index(start, offsetBy: 2)], radix: 16)!
    }
    #expect(sample == bytes)
  }

  @Test func matchesTheDocumentedLayout() {
    #expect(Array(sample[0..<4]) == Array("NBSE".utf8))
    #expect(sample[4] == 1 && sample[5] == 0)
    #expect(sample[16] == 7 && sample[18] == 1 && sample[24] == 13)
    #expect(sample.count == 36 + 7 + (2 + 9 + 8 + 4) + 13 + 4)
  }

  @Test func rejectsEveryTruncation() {
    for length in 0..<sample.count {
      #expect(throws: SpoolEntryFormat.Failure.self) {
        try SpoolEntryFormat.decode(Array(sample.prefix(length)))
      }
    }
    #expect(throws: SpoolEntryFormat.Failure.self) { try SpoolEntryFormat.decode(sample + [0]) }
  }

  @Test func rejectsEverySingleBitFlip() {
    for index in sample.indices {
      for bit in 0..<8 {
        var damaged = sample
        damaged[index] ^= UInt8(1 << bit)
        #expect(throws: SpoolEntryFormat.Failure.self) { try SpoolEntryFormat.decode(damaged) }
      }
    }
  }

  /// Re-seals a damaged header and file so that only the field check can reject it.
  func resealed(_ bytes: [UInt8]) -> [UInt8] {
    var bytes = bytes
    let header = CRC32.checksum(bytes[0..<32])
    withUnsafeBytes(of: header.littleEndian) { bytes.replaceSubrange(32..<36, with: $0) }
    let trailer = CRC32.checksum(bytes[0..<(bytes.count - 4)])
    withUnsafeBytes(of: trailer.littleEndian) {
      bytes.replaceSubrange((bytes.count - 4)..<bytes.count, with: $0)
    }
    return bytes
  }

  @Test(
    arguments: [
      (4, 2, "version"), (6, 1, "reserved"), (20, 1, "reserved"), (16, 0, "id length"),
      (17, 1, "id length"), (19, 0x10, "attachments"), (24, 14, "payload length"),
      (29, 1, "payload length"),
    ] as [(Int, UInt8, String)])
  func rejectsInconsistentFieldsWithAReason(_ offset: Int, _ value: UInt8, _ reason: String) {
    var bytes = sample
    bytes[offset] = value
    let failure = #expect(throws: SpoolEntryFormat.Failure.self) {
      try SpoolEntryFormat.decode(resealed(bytes))
    }
    #expect(failure?.reason.contains(reason) == true, "\(failure?.reason ?? "")")
  }

  @Test func rejectsUnsafeNamesInsideTheFile() {
    let traversal = SpoolEntryFormat.encode(
      enqueueTime: 1, id: "x", attachments: [.init(name: "../../etc", size: 0, checksum: 0)],
      payload: [])
    #expect(throws: SpoolEntryFormat.Failure.self) { try SpoolEntryFormat.decode(traversal) }
    let twice = SpoolEntryFormat.encode(
      enqueueTime: 1, id: "x",
      attachments: [
        .init(name: "a", size: 0, checksum: 0), .init(name: "a", size: 0, checksum: 0),
      ],
      payload: [])
    #expect(throws: SpoolEntryFormat.Failure.self) { try SpoolEntryFormat.decode(twice) }
    let badID = SpoolEntryFormat.encode(enqueueTime: 1, id: "../x", attachments: [], payload: [])
    #expect(throws: SpoolEntryFormat.Failure.self) { try SpoolEntryFormat.decode(badID) }
  }

  @Test func checksumMatchesTheStandardVector() {
    #expect(CRC32.checksum("123456789".utf8) == 0xCBF4_3926)
    #expect(CRC32.checksum([UInt8]()) == 0)
    let long = [UInt8](repeating: 0xA5, count: 1000)
    var split = CRC32()
    split.update(long[0..<333])
    split.update(long[333...])
    #expect(split.value == CRC32.checksum(long))
  }
}

struct SpoolEntryNameTests {
  @Test func roundTripsAndOrdersByTimeThenId() throws {
    let name = SpoolEntryName(time: 42, bytes: 100, id: "a.b")
    #expect(name.rawValue == "0000000000000042.100.a.b")
    #expect(SpoolEntryName(name.rawValue) == name)
    #expect(SpoolEntryName(time: 1, bytes: 9, id: "z") < SpoolEntryName(time: 2, bytes: 1, id: "a"))
    #expect(SpoolEntryName(time: 1, bytes: 9, id: "a") < SpoolEntryName(time: 1, bytes: 1, id: "b"))
  }

  @Test func readsTheByteCountFromRawNames() {
    func count(_ raw: String) -> Int64? {
      Array(raw.utf8).withUnsafeBytes { SpoolEntryName.byteCount(inRawName: $0) }
    }
    #expect(count("0000000000000042.1234.id") == 1234)
    #expect(count("0000000000000042..id") == nil)
    #expect(count("0000000000000042.12x.id") == nil)
    #expect(count("0000000000000042.12") == nil)
    #expect(count("short") == nil)
    #expect(count("0000000000000042." + String(repeating: "9", count: 30) + ".id") == nil)
  }

  @Test(arguments: [
    "", "x", "42.1.a", "000000000000004a.1.a", "0000000000000042..a", "0000000000000042.1.",
    "0000000000000042.1./x", "0000000000000042.01.a", "0000000000000042.1.a b",
    "+000000000000042.1.a",
  ])
  func rejectsMalformedNames(_ raw: String) {
    #expect(SpoolEntryName(raw) == nil)
  }
}

struct KeyLogFormatTests {
  func log(_ keys: [String]) -> [UInt8] {
    keys.reduce(KeyLogFormat.header()) { $0 + KeyLogFormat.record($1) }
  }

  @Test func parsesRecords() throws {
    let bytes = log(["a", "https://example.com/é"])
    try KeyLogFormat.checkHeader(bytes)
    let parsed = KeyLogFormat.parseRecords(bytes, from: KeyLogFormat.headerSize)
    #expect(parsed.keys == ["a", "https://example.com/é"])
    #expect(parsed.validLength == bytes.count)
  }

  @Test func stopsAtATornOrDamagedTail() {
    let good = log(["one", "two"])
    let full = good + KeyLogFormat.record("three")
    for cut in good.count..<full.count {
      let parsed = KeyLogFormat.parseRecords(Array(full.prefix(cut)), from: 8)
      #expect(parsed.keys == ["one", "two"])
      #expect(parsed.validLength == good.count)
    }
    var flipped = full
    flipped[full.count - 6] ^= 1
    #expect(KeyLogFormat.parseRecords(flipped, from: 8).keys == ["one", "two"])
    var zeroLength = good
    zeroLength += [0, 0, 0, 0, 0, 0, 0, 0]
    #expect(KeyLogFormat.parseRecords(zeroLength, from: 8).keys == ["one", "two"])
    var huge = good
    huge += [0xFF, 0xFF, 0xFF, 0xFF]
    #expect(KeyLogFormat.parseRecords(huge, from: 8).validLength == good.count)
  }

  @Test(arguments: [
    [UInt8](), Array("NBK".utf8), Array("XXXX\u{1}\0\0\0".utf8), Array("NBKL\u{2}\0\0\0".utf8),
  ])
  func rejectsBadHeaders(_ bytes: [UInt8]) {
    #expect(throws: SpoolEntryFormat.Failure.self) { try KeyLogFormat.checkHeader(bytes) }
  }
}

struct DefaultsFileTests {
  @Test func roundTrips() throws {
    let values: [String: PropertyListValue] = [
      "s": "x", "i": 1, "d": 1.5, "b": true, "a": [1, "b"], "n": ["k": false],
      "data": .data(Data([1, 2])), "date": .date(Date(timeIntervalSince1970: 10)),
    ]
    #expect(try DefaultsFile.decode(DefaultsFile.encode(values)) == values)
  }

  @Test func rejectsTruncationsAndGarbage() throws {
    let bytes = try DefaultsFile.encode(["key": "value", "list": [1, 2, 3]])
    for length in 0..<bytes.count {
      #expect(throws: SpoolEntryFormat.Failure.self) {
        try DefaultsFile.decode(Array(bytes.prefix(length)))
      }
    }
    #expect(throws: SpoolEntryFormat.Failure.self) {
      try DefaultsFile.decode(Array("bplist00".utf8) + [UInt8](repeating: 0xFF, count: 64))
    }
  }

  @Test func readsFilesWrittenByPythonPlistlib() throws {
    let corpus = Repository.path("Fuzz/DefaultsFileReader/corpus/all-types")
    let values = try DefaultsFile.decode(try #require(readBytes(corpus)))
    #expect(values["s"] == "x")
    #expect(values["i"] == -5)
    #expect(values["d"] == 1.5)
    #expect(values["b"] == true)
    #expect(values["data"] == .data(Data([0, 1])))
    #expect(values["a"] == [1, "two", false])
    #expect(values["n"] == ["k": ["deep": [1.0]]])
    #expect(values["date"] == .date(Date(timeIntervalSince1970: 1_577_836_800)))
  }

  @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
  func writesFilesThatPythonPlistlibReads() throws {
    let temporary = TemporaryDirectory()
    let path = temporary.path + "/out.plist"
    let bytes = try DefaultsFile.encode([
      "s": "naïve", "i": -7, "big": 70_000, "d": 2.5, "b": true, "a": ["x", 1], "n": ["k": "v"],
    ])
    writeFile(path, bytes)
    let text = try Products.runCommand(
      "/usr/bin/python3",
      [
        "-c",
        "import plistlib,sys; d=plistlib.load(open(sys.argv[1],'rb')); "
          + "print(d['s'], d['i'], d['big'], d['d'], d['b'], d['a'], d['n'])",
        path,
      ]
    ).output
    #expect(text == "naïve -7 70000 2.5 True ['x', 1] {'k': 'v'}\n")
  }
}
