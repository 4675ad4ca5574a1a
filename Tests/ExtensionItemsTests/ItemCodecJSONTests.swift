import ExtensionItems
import Foundation
import Testing

struct ItemCodecJSONTests {
  @Test func roundTripsThroughJSON() throws {
    let json = try ItemCodec.encodeJSON(SampleItems.all)
    #expect(try ItemCodec.decodeJSON(json) == SampleItems.all)
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
