import AppGroups
import ExtensionItems
import Foundation
import SystemSupport

/// Moving file payloads out of the encoded items into spool attachments, and back.
///
/// On the way in, a `.file(path:)` representation whose path is absolute (or relative to the
/// working directory), and a `.data` representation larger than the inline limit, become an
/// attachment named `<item>-<provider>-<representation>-<file name>`; the representation
/// then holds that name as a relative file path. On the way out, relative file paths that
/// name an attachment are made absolute inside the claimed entry.
enum ShareAttachments {
  static func pack(_ items: [ExtensionItem], inlineDataLimit: Int)
    -> (items: [ExtensionItem], attachments: [SpoolAttachment])
  {
    var attachments: [SpoolAttachment] = []
    var result = items
    for (itemIndex, item) in items.enumerated() {
      var providers: [ItemProvider] = []
      for (providerIndex, provider) in item.attachments.enumerated() {
        var representations: [ItemRepresentation] = []
        for (index, representation) in provider.representations.enumerated() {
          var representation = representation
          let prefix = "\(itemIndex)-\(providerIndex)-\(index)-"
          switch representation.content {
          case .file(let path):
            let absolute = absolutePath(path)
            let url = URL(fileURLWithPath: absolute)
            let name = prefix + safeName(url.lastPathComponent)
            attachments.append(.file(url, name: name))
            representation.content = .file(path: name)
          case .data(let data) where data.count > inlineDataLimit:
            let base = provider.suggestedName.map(safeName) ?? "data"
            let name = prefix + base
            attachments.append(.data(data, name: name))
            representation.content = .file(path: name)
          default:
            break
          }
          representations.append(representation)
        }
        providers.append(
          ItemProvider(
            representations: representations, suggestedName: provider.suggestedName,
            preferredPresentationSize: provider.preferredPresentationSize))
      }
      result[itemIndex].attachments = providers
    }
    return (result, attachments)
  }

  /// Rewrites relative file paths that name one of `attachments` to the attachment's path.
  static func unpack(_ items: [ExtensionItem], attachments: [SpoolEntry.Attachment])
    -> [ExtensionItem]
  {
    guard !attachments.isEmpty else { return items }
    var byName: [String: String] = [:]
    for attachment in attachments { byName[attachment.name] = attachment.url.path }
    return items.map { item in
      var item = item
      item.attachments = item.attachments.map { provider in
        let representations = provider.representations.map { representation in
          var representation = representation
          if case .file(let path) = representation.content, let resolved = byName[path] {
            representation.content = .file(path: resolved)
          }
          return representation
        }
        return ItemProvider(
          representations: representations, suggestedName: provider.suggestedName,
          preferredPresentationSize: provider.preferredPresentationSize)
      }
      return item
    }
  }

  /// A file name the spool accepts: no `/`, no leading `.`, at most 200 bytes.
  static func safeName(_ name: String) -> String {
    var cleaned = name.replacingOccurrences(of: "/", with: "_")
    while cleaned.hasPrefix(".") { cleaned.removeFirst() }
    if cleaned.isEmpty || cleaned == "entry" { cleaned = "file" }
    while cleaned.utf8.count > 200 { cleaned.removeFirst() }
    return cleaned
  }
}
