import ExtensionItems
import Foundation

/// Encode + decode of realistic extension items with the NotifyBus item codec, against
/// Foundation's `JSONEncoder`/`JSONDecoder` and `PropertyListEncoder`/`PropertyListDecoder`
/// on a `Codable` mirror of the same items, in the same run.
///
/// Rows per workload: round trips per second against JSON (target 3x) and against binary
/// property lists, and the encoded size against JSON. The baselines start from prebuilt
/// `Codable` mirrors, so they are not charged for converting the model; the codec is charged
/// for everything from `ExtensionItem` to bytes and back.
enum ItemCodecSuite: BenchmarkSuite {
  static let name = "codec"

  static func run(scale: Double) async throws -> [BenchmarkRow] {
    var rows: [BenchmarkRow] = []
    for workload in Workload.all {
      rows += try measure(workload, scale: scale)
    }
    return rows
  }

  // MARK: Workloads

  private struct Workload {
    var name: String
    var items: [ExtensionItem]

    static let all = [urlWithTitle, text, imageReference, tenAttachments]

    static let urlWithTitle = Workload(
      name: "URL with title",
      items: [
        ExtensionItem(
          attributedTitle: "Swift on Linux: the road to 6.3",
          attachments: [
            ItemProvider(url: URL(string: "https://www.swift.org/blog/swift-6.3-released/")!)
          ])
      ])

    static let text = Workload(
      name: "text",
      items: [
        ExtensionItem(
          attributedContentText: AttributedText(
            String(
              repeating: "Share extensions hand items to their app through a group container. ",
              count: 4)),
          attachments: [ItemProvider(text: "Quoted passage from the article, kept for later.")])
      ])

    static let imageReference: Workload = {
      var provider = ItemProvider(fileAtPath: "attachments/IMG_0042.HEIC")
      provider.preferredPresentationSize = PresentationSize(width: 4032, height: 3024)
      let item = ExtensionItem(
        attributedTitle: "Harbour at dusk",
        attachments: [provider],
        userInfo: [
          "camera": "Pixel 9", "iso": 100, "aperture": 1.8, "exposure": 0.008,
          "takenAt": .date(Date(timeIntervalSinceReferenceDate: 8.1e8)),
          "location": ["latitude": 59.9139, "longitude": 10.7522],
          "tags": ["harbour", "evening"],
        ])
      return Workload(name: "image reference with metadata", items: [item])
    }()

    static let tenAttachments: Workload = {
      let providers = (0..<10).map { index in
        var provider = ItemProvider(fileAtPath: "album/photo-\(index).jpg")
        provider.preferredPresentationSize = PresentationSize(width: 1920, height: 1080)
        return provider
      }
      return Workload(
        name: "10-attachment item",
        items: [ExtensionItem(attributedTitle: "Weekend album", attachments: providers)])
    }()
  }

  // MARK: Measurement

  private static func measure(_ workload: Workload, scale: Double) throws -> [BenchmarkRow] {
    let items = workload.items
    let mirror = items.map(CodableItem.init)
    let jsonEncoder = JSONEncoder()
    let jsonDecoder = JSONDecoder()
    let plistEncoder = PropertyListEncoder()
    plistEncoder.outputFormat = .binary
    let plistDecoder = PropertyListDecoder()

    let encoded = try ItemCodec.encode(items)
    let decoded = try ItemCodec.decode(encoded)
    precondition(decoded == items, "the codec must round-trip")
    let json = try jsonEncoder.encode(mirror)
    let jsonDecoded = try jsonDecoder.decode([CodableItem].self, from: json)
    precondition(jsonDecoded == mirror, "the JSON baseline must round-trip")
    let plist = try plistEncoder.encode(mirror)
    let plistDecoded = try plistDecoder.decode([CodableItem].self, from: plist)
    precondition(plistDecoded == mirror, "the property-list baseline must round-trip")

    let seconds = max(0.05, 0.5 * scale)
    let codec = try rate(seconds: seconds) {
      let bytes = try ItemCodec.encode(items)
      return try ItemCodec.decode(bytes).count + bytes.count
    }
    let jsonRate = try rate(seconds: seconds) {
      let data = try jsonEncoder.encode(mirror)
      return try jsonDecoder.decode([CodableItem].self, from: data).count + data.count
    }
    let plistRate = try rate(seconds: seconds) {
      let data = try plistEncoder.encode(mirror)
      return try plistDecoder.decode([CodableItem].self, from: data).count + data.count
    }
    return [
      BenchmarkRow(
        name: "item round trip, \(workload.name)", unit: "items/s",
        subject: codec * Double(items.count), baselineName: "Foundation JSONEncoder/Decoder",
        baseline: jsonRate * Double(items.count), higherIsBetter: true, target: 3),
      BenchmarkRow(
        name: "item round trip, \(workload.name)", unit: "items/s",
        subject: codec * Double(items.count),
        baselineName: "Foundation PropertyListEncoder/Decoder (binary)",
        baseline: plistRate * Double(items.count), higherIsBetter: true, target: nil),
      BenchmarkRow(
        name: "encoded size, \(workload.name)", unit: "bytes",
        subject: Double(encoded.count), baselineName: "Foundation JSONEncoder",
        baseline: Double(json.count), higherIsBetter: false, target: nil),
    ]
  }
}

// MARK: - Codable mirror for the baselines

private struct CodableItem: Codable, Equatable {
  var title: CodableText?
  var contentText: CodableText?
  var attachments: [CodableProvider]
  var userInfo: [String: CodableValue]

  init(_ item: ExtensionItem) {
    title = item.attributedTitle.map(CodableText.init)
    contentText = item.attributedContentText.map(CodableText.init)
    attachments = item.attachments.map(CodableProvider.init)
    userInfo = item.customUserInfo.mapValues(CodableValue.init)
  }
}

private struct CodableText: Codable, Equatable {
  var string: String
  var richType: String?
  var richData: Data?

  init(_ text: AttributedText) {
    string = text.string
    richType = text.richText?.type.identifier
    richData = text.richText?.data
  }
}

private struct CodableProvider: Codable, Equatable {
  var suggestedName: String?
  var width: Double
  var height: Double
  var representations: [CodableRepresentation]

  init(_ provider: ItemProvider) {
    suggestedName = provider.suggestedName
    width = provider.preferredPresentationSize.width
    height = provider.preferredPresentationSize.height
    representations = provider.representations.map(CodableRepresentation.init)
  }
}

private struct CodableRepresentation: Codable, Equatable {
  var type: String
  var visibility: UInt32
  var kind: UInt8
  var string: String?
  var data: Data?

  init(_ representation: ItemRepresentation) {
    type = representation.type.identifier
    visibility = representation.visibility.rawValue
    kind = representation.content.kind.rawValue
    switch representation.content {
    case .data(let bytes): data = bytes
    case .file(let path): string = path
    case .url(let url): string = url.absoluteString
    case .text(let text): string = text
    }
  }
}

private indirect enum CodableValue: Codable, Equatable {
  case string(String)
  case integer(Int64)
  case double(Double)
  case bool(Bool)
  case date(Date)
  case data(Data)
  case array([CodableValue])
  case dictionary([String: CodableValue])

  init(_ value: PropertyListValue) {
    switch value {
    case .string(let x): self = .string(x)
    case .integer(let x): self = .integer(x)
    case .double(let x): self = .double(x)
    case .bool(let x): self = .bool(x)
    case .date(let x): self = .date(x)
    case .data(let x): self = .data(x)
    case .array(let x): self = .array(x.map(CodableValue.init))
    case .dictionary(let x): self = .dictionary(x.mapValues(CodableValue.init))
    }
  }
}
