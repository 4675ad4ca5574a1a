public import AppGroups
public import ExtensionItems
public import Foundation

/// One share as the app receives it: the items one ``HandoffSender/send(_:id:)`` stored.
///
/// File representations point at the attachment files inside the claimed spool entry, as
/// absolute paths. Those files exist only while the handler runs: copy or move them to keep
/// them, as with `loadFileRepresentation(forTypeIdentifier:)`.
public struct ReceivedShare: Sendable {
  /// The share's idempotency id, which is the spool entry's id.
  ///
  /// Redelivery keeps it, so store it as a unique key to make the import idempotent.
  public var id: String
  /// When the extension stored the share.
  public var enqueueDate: Date
  /// The items, as the extension sent them, with file references made absolute.
  public var items: [ExtensionItem]
  /// The attachment files, in the order the extension stored them.
  public var attachments: [SpoolEntry.Attachment]

  /// Creates a share.
  ///
  /// - Parameters:
  ///   - id: The idempotency id.
  ///   - enqueueDate: When it was stored.
  ///   - items: The items.
  ///   - attachments: The attachment files.
  public init(
    id: String, enqueueDate: Date, items: [ExtensionItem], attachments: [SpoolEntry.Attachment]
  ) {
    self.id = id
    self.enqueueDate = enqueueDate
    self.items = items
    self.attachments = attachments
  }

  /// The first web (non-file) URL among the items' attachments, if any.
  public var url: URL? { Self.firstWebURL(in: items) }

  /// The first web (non-file) URL among the attachments of `items`.
  ///
  /// - Parameter items: The items to search, in order.
  public static func firstWebURL(in items: [ExtensionItem]) -> URL? {
    for item in items {
      for provider in item.attachments {
        for representation in provider.representations {
          if case .url(let url) = representation.content, !url.isFileURL { return url }
        }
      }
    }
    return nil
  }
}
