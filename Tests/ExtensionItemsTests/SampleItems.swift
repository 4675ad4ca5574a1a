import ExtensionItems
import Foundation

/// Realistic items that exercise every field of the model.
enum SampleItems {
  static let webPage: ExtensionItem = {
    var provider = ItemProvider(url: URL(string: "https://www.swift.org/blog/swift-on-linux/")!)
    provider.suggestedName = "Swift on Linux"
    return ExtensionItem(
      attributedTitle: "Swift on Linux",
      attributedContentText: AttributedText(
        "Read later", richText: .init(type: .rtf, data: Data("{\\rtf1 Read later}".utf8))),
      attachments: [provider],
      userInfo: [
        "supportsJavaScript": true, "savedAt": .date(Date(timeIntervalSinceReferenceDate: 8e8)),
      ])
  }()

  static let photo: ExtensionItem = {
    var provider = ItemProvider(fileAtPath: "attachments/IMG_0042.HEIC")
    provider.preferredPresentationSize = PresentationSize(width: 4032, height: 3024)
    provider.register(.data(Data(repeating: 0xAB, count: 300)), as: .jpeg, visibility: .ownProcess)
    return ExtensionItem(
      attachments: [provider],
      userInfo: [
        "exif": ["iso": 100, "aperture": 1.8, "flash": false, "lens": "wide"],
        "tags": ["holiday", 2026, ["nested": .data(Data([0, 1, 2]))]],
      ])
  }()

  static let text = ExtensionItem(
    attributedContentText: "Ünïcödé text, emoji 🦅, quotes \"'\\ and a newline\n",
    attachments: [ItemProvider(text: "plain text attachment")])

  static let tenAttachments = ExtensionItem(
    attributedTitle: "Album",
    attachments: (0..<10).map { index in
      var provider = ItemProvider(fileAtPath: "album/photo-\(index).jpg")
      provider.preferredPresentationSize = PresentationSize(width: 1920, height: 1080)
      return provider
    })

  static let all = [webPage, photo, text, tenAttachments, ExtensionItem()]
}
