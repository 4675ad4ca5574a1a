import ExtensionItems
import Foundation
import Testing

struct ItemCodecJSONTests {
  @Test func roundTripsThroughJSON() throws {
    let json = try ItemCodec.encodeJSON(SampleItems.all)
    #expect(try ItemCodec.decodeJSON(json) == SampleItems.all)
  }

  /// Foundation's JSON parser hands integers at or below -10^18 over as decimal numbers; they
  /// must still read back as the same integers, and reals as reals.
  @Test func largeNegativeIntegersRoundTripExactly() throws {
    let integers: [Int64] = [
      .min, .min + 1, -1_000_000_000_000_000_001, -1_000_000_000_000_000_000,
      -999_999_999_999_999_999, .max,
    ]
    var userInfo: [String: PropertyListValue] = ["real": .double(-1e18)]
    for (index, integer) in integers.enumerated() { userInfo["i\(index)"] = .integer(integer) }
    let item = ExtensionItem(userInfo: userInfo)
    let decoded = try ItemCodec.decodeJSON(try ItemCodec.encodeJSON([item]))
    #expect(decoded == [item])
    let text = #"""
      {"format": "org.notifybus.items", "version": 1, "items": [{"userInfo": {
        "n": -1000000000000000000, "m": -9223372036854775808, "f": -1000000000000000000.5,
        "below": -9223372036854775809}}]}
      """#
    let read = try #require(try ItemCodec.decodeJSON(Data(text.utf8)).first?.customUserInfo)
    #expect(read["n"] == .integer(-1_000_000_000_000_000_000))
    #expect(read["m"] == .integer(.min))
    #expect(read["f"] == .double(-1_000_000_000_000_000_000.5))
    #expect(read["below"] == .double(-0x1p63), "below Int64.min: a double")
  }

  /// The JSON mapping applies the binary codec's URL rule: absolute, byte for byte.
  @Test func urlsFollowTheBinaryCodecsRule() throws {
    func document(_ url: String) -> Data {
      Data(
        #"""
        {"format": "org.notifybus.items", "version": 1, "items": [{"attachments": [
          {"representations": [{"type": "public.url", "url": "\#(url)"}]}]}]}
        """#.utf8)
    }
    let kept = "HTTPS://Example.COM/a/../b?q=%C3%A4"
    let items = try ItemCodec.decodeJSON(document(kept))
    let text = String(decoding: try ItemCodec.encodeJSON(items), as: UTF8.self)
    #expect(text.contains(#""url": "\#(kept)""#))
    for refused in ["relative/path", "https://example.com/ü?q=ä", "a b", "https://a/%zz"] {
      do {
        let items = try ItemCodec.decodeJSON(document(refused))
        Issue.record("\(refused) read as \(items)")
      } catch {
        #expect(error.code == .invalidJSON, "\(error)")
        #expect(error.description.contains("absolute URL"), "\(error)")
      }
    }
  }

  @Test func readableAndStable() throws {
    var provider = ItemProvider(url: URL(string: "https://swift.org")!)
    provider.register(.data(Data([1, 2, 3])), as: .png, visibility: .ownProcess)
    let item = ExtensionItem(
      attributedTitle: "Swift", attachments: [provider],
      userInfo: [
        "n": 1, "r": 2.0, "flag": false, "bytes": .data(Data([255])),
        "when": .date(Date(timeIntervalSinceReferenceDate: 0.25)),
        "tricky": ["$data": "not bytes"],
      ])
    let text = String(decoding: try ItemCodec.encodeJSON([item]), as: UTF8.self)
    let expected = """
      {
        "format": "org.notifybus.items",
        "items": [
          {
            "attachments": [
              {
                "representations": [
                  {
                    "type": "public.url",
                    "url": "https://swift.org"
                  },
                  {
                    "data": "AQID",
                    "type": "public.png",
                    "visibility": 3
                  }
                ]
              }
            ],
            "title": {
              "string": "Swift"
            },
            "userInfo": {
              "bytes": {
                "$data": "/w=="
              },
              "flag": false,
              "n": 1,
              "r": 2.0,
              "tricky": {
                "$dictionary": {
                  "$data": "not bytes"
                }
              },
              "when": {
                "$date": "2001-01-01T00:00:00.250Z"
              }
            }
          }
        ],
        "version": 1
      }

      """
    #expect(text == expected)
    #expect(try ItemCodec.decodeJSON(Data(text.utf8)) == [item])
  }

  @Test(arguments: [
    ("not json", ItemCodecError.Code.invalidJSON),
    ("[]", .invalidJSON),
    (#"{"format": "other", "version": 1, "items": []}"#, .invalidJSON),
    (#"{"format": "org.notifybus.items", "version": 2, "items": []}"#, .unsupportedVersion),
    (#"{"format": "org.notifybus.items", "version": 1, "items": [3]}"#, .invalidJSON),
    (
      #"{"format": "org.notifybus.items", "version": 1, "items": [{"attachments": [{}]}]}"#,
      .invalidJSON
    ),
    (
      #"{"format": "org.notifybus.items", "version": 1, "items": [{"userInfo": {"a": null}}]}"#,
      .invalidJSON
    ),
    (
      #"{"format": "org.notifybus.items", "version": 1, "items": [{"userInfo": {"a": {"$data": "!!"}}}]}"#,
      .invalidJSON
    ),
    (
      #"{"format": "org.notifybus.items", "version": 1, "items": [{"title": {"string": "a\u0000"}}]}"#,
      .invalidString
    ),
    (
      #"{"format": "org.notifybus.items", "version": 1, "items": [{"userInfo": {"NSExtensionItemAttachmentsKey": 1}}]}"#,
      .invalidValue
    ),
  ])
  func malformedJSON(_ text: String, _ code: ItemCodecError.Code) {
    do {
      let items = try ItemCodec.decodeJSON(Data(text.utf8))
      Issue.record("decoded \(items)")
    } catch {
      #expect(error.code == code, "\(error)")
    }
  }

  @Test func nonFiniteRealsCannotBeJSON() {
    let item = ExtensionItem(userInfo: ["x": .double(.infinity)])
    #expect(throws: ItemCodecError.self) { try ItemCodec.encodeJSON([item]) }
    #expect((try? ItemCodec.encode([item])) != nil, "the binary form carries any double")
  }

  @Test func jsonObeysTheLimits() throws {
    let json = try ItemCodec.encodeJSON([SampleItems.tenAttachments])
    do {
      _ = try ItemCodec.decodeJSON(json, limits: .init(maximumAttachmentCount: 3))
      Issue.record("decoded ten attachments with a limit of three")
    } catch {
      #expect(error.code == .tooManyAttachments)
    }
  }
}
