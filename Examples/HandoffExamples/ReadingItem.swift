import AppGroups
import ExtensionItems
public import Foundation
public import Handoff

/// What the read-later app keeps of one share: the iOS original's `ReadingItem`
/// (`Protocol/handoff.md` §6), plus the text and attachments it dropped.
public struct ReadingItem: Sendable, Hashable {
  /// The share's id, unique in the list, so storing a redelivered share changes nothing.
  public var id: String
  /// The first web URL shared, if any.
  public var url: String?
  /// The title, or the URL when no title was shared.
  public var title: String
  /// The shared text, one paragraph per text attachment.
  public var text: String
  /// When the extension saved the share.
  public var savedAt: Date
  /// The attachment files.
  public var attachments: [Attachment]

  /// One attached file.
  public struct Attachment: Sendable, Hashable {
    /// The file's name as shared.
    public var name: String
    /// Its uniform type identifier.
    public var type: String
    /// The file: first in the spool entry, then in the app's own directory once stored.
    public var path: String
    /// Its size in bytes.
    public var size: Int64
  }

  /// The reading item of a received share.
  ///
  /// - Parameter share: The share the importer handed over.
  public init(share: ReceivedShare) {
    id = share.id
    url = share.url?.absoluteString
    savedAt = share.enqueueDate
    var title: String?
    var paragraphs: [String] = []
    var files: [Attachment] = []
    for item in share.items {
      if title == nil, let text = item.attributedTitle?.string, !text.isEmpty { title = text }
      if let text = item.attributedContentText?.string, !text.isEmpty { paragraphs.append(text) }
      for provider in item.attachments {
        for representation in provider.representations {
          switch representation.content {
          case .text(let text) where representation.type.conforms(to: .text):
            paragraphs.append(text)
          case .file(let path):
            let size = share.attachments.first { $0.url.path == path }?.size ?? 0
            let name = provider.suggestedName ?? URL(fileURLWithPath: path).lastPathComponent
            files.append(
              Attachment(name: name, type: representation.type.identifier, path: path, size: size))
          default:
            break
          }
        }
      }
    }
    self.title = title ?? url ?? "Untitled"
    text = paragraphs.joined(separator: "\n\n")
    attachments = files
  }

  /// Creates an item from stored fields.
  public init(
    id: String, url: String?, title: String, text: String, savedAt: Date, attachments: [Attachment]
  ) {
    self.id = id
    self.url = url
    self.title = title
    self.text = text
    self.savedAt = savedAt
    self.attachments = attachments
  }
}
