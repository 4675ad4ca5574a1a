import Foundation
import PropertyLists
import Testing

struct BinaryPropertyListTests {
  /// Builds a binary property list from raw objects, for malformed-input tests.
  func plist(_ objects: [[UInt8]], top: UInt8 = 0, referenceSize: UInt8 = 1) -> [UInt8] {
    var bytes = Array("bplist00".utf8)
    var offsets: [UInt8] = []
    for object in objects {
      offsets.append(UInt8(bytes.count))
      bytes += object
    }
    let table = bytes.count
    bytes += offsets
    bytes += [0, 0, 0, 0, 0, 0, 1, referenceSize]
    bytes += [0, 0, 0, 0, 0, 0, 0, UInt8(objects.count)]
    bytes += [0, 0, 0, 0, 0, 0, 0, top]
    bytes += [0, 0, 0, 0, 0, 0, 0, UInt8(table)]
    return bytes
  }

  @Test func roundTripsEdgeValues() throws {
    let value: PropertyListValue = [
      "ascii": "plain", "unicode": "naïve ✓ 𝄞", "long": .string(String(repeating: "x", count: 300)),
      "zero": 0, "small": 255, "medium": 65_535, "large": 4_294_967_295, "huge": .integer(.max),
      "negative": -1, "min": .integer(.min), "real": 0.1, "inf": .double(.infinity),
      "true": true, "false": false, "empty": [], "emptyDict": [:],
      "data": .data(Data(repeating: 0xAB, count: 40)),
      "date": .date(Date(timeIntervalSince1970: -5)),
      "fraction": .date(Date(timeIntervalSinceReferenceDate: 0.1)),
      "tiny": .date(Date(timeIntervalSinceReferenceDate: -0.000_000_1)),
      "list": .array((0..<20).map { .integer($0) }),
    ]
    #expect(try BinaryPropertyList.decode(BinaryPropertyList.encode(value)) == value)
  }

  @Test(
    arguments: [
      ([[0xD1, 1, 1], [0x10, 1]], "not a string"),  // an integer key
      ([[0xA1, 0]], "contains itself"),  // an array holding itself
      ([[0xA1, 5]], "out of range"),  // reference past the object count
      ([[0x00]], "null"),
      ([[0x80, 1]], "UID"),
      ([[0xC0]], "set"),
      ([[0x14, 1] + [UInt8](repeating: 0, count: 15)], "does not fit in 64 bits"),
      ([[0x15] + [UInt8](repeating: 0, count: 32)], "wider than 128 bits"),
      ([[0x21, 0, 0]], "width"),
      ([[0x5F, 0x10, 200, 0x41]], "larger than the file"),
      ([[0x5E, 0x41]], "past the object area"),
      ([[0x5F, 0x20, 1]], "not an integer"),
      ([[0x51, 0xC3]], "non-ASCII"),
      ([[0x61, 0xD8, 0x00]], "UTF-16"),
      ([[0x33, 0x7F, 0xF0, 0, 0, 0, 0, 0, 0]], "not finite"),
    ] as [([[UInt8]], String)])
  func rejectsMalformedObjectsWithAReason(_ objects: [[UInt8]], _ reason: String) {
    let failure = #expect(throws: PropertyListError.self) {
      try BinaryPropertyList.decode(plist(objects))
    }
    #expect(failure?.message.contains(reason) == true, "\(failure?.message ?? "")")
  }

  /// CoreFoundation writes unsigned values above `Int64.max` as 128-bit integers.
  @Test func readsOneHundredTwentyEightBitIntegersThatFit() throws {
    let small: [UInt8] = [0x14] + [UInt8](repeating: 0, count: 15) + [42]
    #expect(try BinaryPropertyList.decode(plist([small])) == 42)
    let large: [UInt8] =
      [0x14] + [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0xFF, count: 8)
    #expect(try BinaryPropertyList.decode(plist([large])) == .double(Double(UInt64.max)))
  }

  @Test func datesThatAreNotFiniteAreNotWritten() {
    for seconds in [Double.infinity, -.infinity, .nan] {
      let error = #expect(throws: PropertyListError.self) {
        try BinaryPropertyList.encode(["when": .date(Date(timeIntervalSinceReferenceDate: seconds))]
        )
      }
      #expect(error?.message.contains("cannot be written") == true)
    }
  }

  @Test func limitsAreTheCallersToSet() throws {
    let bytes = try BinaryPropertyList.encode([[["deep"]]])
    #expect(try BinaryPropertyList.decode(bytes) == [[["deep"]]])
    let tight = BinaryPropertyList.Limits(maximumDepth: 3, maximumValues: 100)
    let deep = #expect(throws: PropertyListError.self) {
      try BinaryPropertyList.decode(bytes, limits: tight)
    }
    #expect(deep?.message == "values are nested deeper than 3")
    let few = BinaryPropertyList.Limits(maximumDepth: 10, maximumValues: 3)
    let many = #expect(throws: PropertyListError.self) {
      try BinaryPropertyList.decode(bytes, limits: few)
    }
    #expect(many?.message == "the file expands to more than 3 values")
  }

  @Test func rejectsBadTrailers() throws {
    var bytes = plist([[0x09]])
    for (offset, value) in [(6, UInt8(0)), (6, 9), (7, 0), (15, 0), (23, 1), (31, 0), (31, 200)] {
      var damaged = bytes
      damaged[damaged.count - 32 + offset] = value
      #expect(throws: PropertyListError.self) { try BinaryPropertyList.decode(damaged) }
    }
    bytes[8] = 0x09
    #expect(try BinaryPropertyList.decode(bytes) == true)
  }

  /// Found by Fuzz/run DefaultsFileReader: an 8-byte offset above `Int.max` trapped.
  @Test func fuzzRegressionHugeObjectOffset() {
    var bytes = Array("bplist00".utf8) + [0x09]
    bytes += [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]  // offset table: one 8-byte entry
    bytes += [0, 0, 0, 0, 0, 0, 8, 1] + [0, 0, 0, 0, 0, 0, 0, 1] + [UInt8](repeating: 0, count: 8)
    bytes += [0, 0, 0, 0, 0, 0, 0, 9]
    let failure = #expect(throws: PropertyListError.self) {
      try BinaryPropertyList.decode(bytes)
    }
    #expect(failure?.message.contains("outside the object area") == true)
  }

  @Test func refusesDeepNestingAndExpansionBombs() throws {
    // 300 arrays, each holding the next: deeper than the limit.
    let deepBytes = try BinaryPropertyList.encode(
      (0..<300).reduce(PropertyListValue.bool(true)) { inner, _ in .array([inner]) })
    #expect(throws: PropertyListError.self) { try BinaryPropertyList.decode(deepBytes) }
    // 12 levels of 14 references to the same next array: 14^12 values if expanded.
    var bomb: [[UInt8]] = (0..<12).map { [0xAE] + [UInt8](repeating: UInt8($0 + 1), count: 14) }
    bomb.append([0x09])
    let failure = #expect(throws: PropertyListError.self) {
      try BinaryPropertyList.decode(plist(bomb))
    }
    #expect(failure?.message.contains("more than") == true)
  }
}
