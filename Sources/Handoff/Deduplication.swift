public import ExtensionItems
import Foundation

/// How a ``PendingImporter`` drops shares it has already imported: by a key, remembered in a
/// ``SeenKeys`` set in the group container.
///
/// The key is recorded only after the handler returned, so a share whose handler failed is
/// not mistaken for a duplicate when it is delivered again. A share without a key is never
/// dropped.
///
/// ```swift
/// let importer = try await PendingImporter.connect(
///   group: "group.example.readlater", notification: "group.example.saved",
///   deduplication: .byURL())
/// ```
public struct Deduplication: Sendable {
  /// The name of the ``SeenKeys`` set in the container.
  public var setName: String
  /// How many of the newest keys the set always remembers.
  public var capacity: Int
  /// The key of a share's items, or `nil` to never drop it.
  public var key: @Sendable ([ExtensionItem]) -> String?

  /// Creates a policy.
  ///
  /// - Parameters:
  ///   - setName: A portable name: letters, digits, `.`, `_`, `-`.
  ///   - capacity: How many of the newest keys are always remembered.
  ///   - key: The key of a share's items.
  public init(
    setName: String, capacity: Int = 10_000, key: @escaping @Sendable ([ExtensionItem]) -> String?
  ) {
    self.setName = setName
    self.capacity = capacity
    self.key = key
  }

  /// Drops a share whose first web URL was imported before, as the iOS original's `PendingImporter`
  /// does with its `importedURLs` list (but across drains and launches).
  ///
  /// - Parameters:
  ///   - setName: The ``SeenKeys`` set; `imported-urls` by default.
  ///   - capacity: How many of the newest URLs are always remembered.
  public static func byURL(setName: String = "imported-urls", capacity: Int = 10_000)
    -> Deduplication
  {
    Deduplication(setName: setName, capacity: capacity) { items in
      ReceivedShare.firstWebURL(in: items)?.absoluteString
    }
  }
}
