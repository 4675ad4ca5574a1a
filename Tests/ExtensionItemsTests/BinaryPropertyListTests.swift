import ExtensionItems
import Foundation
import Testing

/// Assembles a binary property list from encoded objects (1-byte references and offsets).
private func bplist(_ objects: [[UInt8]], top: Int = 0, referenceSize: UInt8 = 1) -> Data {
  var bytes = Array("bplist00".utf8)
  var offsets: [Int] = []
  for object in objects {
    offsets.append(bytes.count)
    bytes += object
  }
  let tableOffset = bytes.count
  for offset in offsets { bytes += [UInt8(offset >> 8), UInt8(offset & 0xFF)] }
  bytes += [0, 0, 0, 0, 0, 0, 2, referenceSize]
  for value in [UInt64(objects.count), UInt64(top), UInt64(tableOffset)] {
    bytes += (0..<8).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
  }
  return Data(bytes)
}

private func ascii(_ text: String) -> [UInt8] {
  let count = text.utf8.count
  return (count < 15 ? [0x50 | UInt8(count)] : [0x5F, 0x10, UInt8(count)]) + Array(text.utf8)
}

/// A manifest `{"NSExtension": {"NSExtensionPointIdentifier": <object 4>}}` whose point
/// identifier is object 4, given as `point`.
private func manifest(point: [UInt8], extra: [[UInt8]] = []) -> Data {
  bplist(
    [
      [0xD1, 1, 2], ascii("NSExtension"), [0xD1, 3, 4], ascii("NSExtensionPointIdentifier"),
      point,
    ] + extra)
}

/// An input that crashed swift-corelibs-foundation's binary property-list reader (found by
/// `Fuzz/run ExtensionManifest`).
private let foundationCrash = """
  YnBsaXN0MDDUAQIDBAUGDx1fEBJDRkJ1bmRsZUlkZW50aWZpZXJbTlNFeHRlbnNpb25fEBpVVEV4cG9ydGVkVHlw
  ZURlY2xhcmF0aW9uc18QGlVUSW1wb3J0ZWRUeXBlRGVjbGFyYXRpb25zXxARbmV0LmV4YW1wbGUuc2hhcmXTBwgJ
  Cg0OXxAVTlNFeHRlbnNpb25BdHRyaWJ1dGVzXxAaTlNFeHRlbnNpb25Qb2ludElkZW50aWZpZXJfEBlOU0V4dGVu
  c2lvblByaW5jaXBhbENsYXNz0QsMXxAZTlNFeHRlbnNpb25BY3RpdmF0aW9uUnVsZV8QmVNVQlFVRVJZKGV4dGVu
  c2lvbkl0ZS1zLCAkZSwgU1VCUVVFUlkoJGUuYXR0YWNobWVudHMsICRhLCBBTlkgJGEucmVnaXN0ZXJlZFR5cGVJ
  ZGVudGlmaWVycyBVVEktQ09ORk9STVMtVE8gIm5ldC5leGFtcGxlLnJlY2lwZSIpLkBjb3VudCA+PSAxKS5AY291
  bnQgPT0gMV8QGGNvbS5hcHBsZS5zT2JqZWN0ZXJ2aWNlc18QE1NoYXJlVmlld0NvbnRyb2xsZXKhENMREhMUFhdf
  EBBVVFR5cGVDb25mb3Jtc1RvXxAQVVRUeXBlSWRlbnRpZmllcl8QFlVUVHlwZVRhZ1NwZWNpZmljYXRpb26hFVtw
  dWJsaWMuanNvbl8QEm5ldC5leGFtcGxlLnJlY2lwZdIYGRobXxAZcHVibGljLmZpbGVuYW1lLWV4dGVuc2lvbl8Q
  EHB1YmxpYy5taW1lLXR5cGVWcmVjaXBloRwUEF9hcHBsaWNhdGlvbi94LXJlY2lwZaEewhESHyBbcHVibGljLmRh
  dGFeb3JnLm90aGVyLmNhcmQACAARACYAMgBPAGwAgACHAJ8AvADYANsA9wGTAa4BxAHGAc0B4AHzAgwCDgIaAi8C
  NAJQAmMCagJsAoMChQKKApYAAAAAAAACAQAAAAAAAAAhAAAAAAAAAAAAAAAAAAACpQ==
  """

struct BinaryPropertyListTests {
  @Test func readsEveryValueType() throws {
    let value = try ExtensionManifest(propertyList: manifest(point: ascii("p")))
    #expect(value.pointIdentifier == "p")
    let utf16 = manifest(point: [0x63, 0x00, 0xE9, 0xD8, 0x3D, 0xDE, 0x00])
    #expect(try ExtensionManifest(propertyList: utf16).pointIdentifier == "\u{E9}\u{1F600}")
    let info: [String: Any] = [
      "NSExtension": [
        "NSExtensionPointIdentifier": "com.apple.share-services",
        "NSExtensionAttributes": [
          "int8": 7, "int16": 300, "int32": 70_000, "int64": -5, "big": UInt64.max,
          "real": 1.5, "date": Date(timeIntervalSinceReferenceDate: 42), "yes": true,
          "no": false, "data": Data([1, 2, 3]), "array": ["x", 1], "unicode": "é🦅",
          "long": String(repeating: "a", count: 40),
        ],
      ]
    ]
    let data = try PropertyListSerialization.data(
      fromPropertyList: info, format: .binary, options: 0)
    let attributes = try ExtensionManifest(propertyList: data).attributes
    let expected: [String: PropertyListValue] = [
      "int8": 7, "int16": 300, "int32": 70_000, "int64": -5, "big": .double(Double(UInt64.max)),
      "real": 1.5, "date": .date(Date(timeIntervalSinceReferenceDate: 42)), "yes": true,
      "no": false, "data": .data(Data([1, 2, 3])), "array": ["x", 1], "unicode": "é🦅",
      "long": .string(String(repeating: "a", count: 40)),
    ]
    #expect(attributes == expected)
  }

  @Test func foundationCrashInputIsRejected() throws {
    let data = try #require(
      Data(base64Encoded: foundationCrash.filter { !$0.isWhitespace }))
    #expect(throws: ExtensionManifestError.self) { try ExtensionManifest(propertyList: data) }
  }

  @Test(arguments: [
    ("cycle", manifest(point: [0xA1, 4])),
    ("set", manifest(point: [0xC1, 1])),
    ("uid", manifest(point: [0x80, 1])),
    ("null", manifest(point: [0x00])),
    ("reference out of range", manifest(point: [0xA1, 9])),
    ("count past the end", manifest(point: [0x5F, 0x10, 0xFF])),
    ("huge count", manifest(point: [0x4F, 0x13, 0x7F, 0, 0, 0, 0, 0, 0, 0])),
    ("non-ASCII in ASCII string", manifest(point: [0x51, 0xC3])),
    ("unpaired surrogate", manifest(point: [0x61, 0xD8, 0x00])),
    ("non-string key", bplist([[0xD1, 1, 1], [0x10, 1]])),
    ("bad magic", Data("bplist01".utf8) + Data(count: 40)),
    ("too short", Data("bplist00".utf8)),
    ("top out of range", bplist([[0x08]], top: 3)),
    ("bad reference size", bplist([[0x08]], referenceSize: 9)),
    ("OpenStep text", Data("{ NSExtension = { NSExtensionPointIdentifier = p; }; }".utf8)),
  ])
  func malformedBinaryPropertyLists(_ name: String, _ data: Data) {
    do {
      let result = try ExtensionManifest(propertyList: data)
      Issue.record("\(name): read \(result)")
    } catch {
      #expect(error.code == .unreadable || error.code == .wrongType, "\(name): \(error)")
    }
  }

  @Test func sharedReferencesCannotExplode() {
    // NSExtensionAttributes = {"NSExtensionAttributes": object 8}; object 8 + k is an array
    // holding object 9 + k twice, so expanding 40 levels would make 2^40 leaves.
    let levels = 40
    let header: [[UInt8]] = [
      [0xD1, 1, 2], ascii("NSExtension"), [0xD2, 3, 5, 4, 6],
      ascii("NSExtensionPointIdentifier"), ascii("p"), ascii("NSExtensionAttributes"),
      [0xD1, 5, 8], [0x08],
    ]
    let chain = (0..<levels).map { level -> [UInt8] in
      level == levels - 1 ? [0x09] : [0xA2, UInt8(9 + level), UInt8(9 + level)]
    }
    let shallow = bplist(header + chain.suffix(1) + [[0x09]])
    #expect((try? ExtensionManifest(propertyList: shallow)) != nil)
    let bomb = bplist(header + chain)
    #expect(throws: ExtensionManifestError.self) { try ExtensionManifest(propertyList: bomb) }
  }

  @Test func truncationAtEveryOffsetIsRejected() throws {
    let data = try PropertyListSerialization.data(
      fromPropertyList: [
        "NSExtension": ["NSExtensionPointIdentifier": "com.apple.share-services"]
      ], format: .binary, options: 0)
    #expect(try ExtensionManifest(propertyList: data).pointIdentifier == "com.apple.share-services")
    for length in 0..<data.count {
      #expect(throws: ExtensionManifestError.self) {
        try ExtensionManifest(propertyList: data.prefix(length))
      }
    }
  }
}
