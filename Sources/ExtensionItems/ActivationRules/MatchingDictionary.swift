import Foundation

/// Builds the dictionary activation rules are evaluated against, as a share host does.
///
/// The result has the shape `{"extensionItems": [item, ...]}`, where each item holds its
/// custom user info, `"title"` and `"contentText"` as plain strings, and
/// `"attachments": [{"registeredTypeIdentifiers": [...]}, ...]`.
public enum MatchingDictionary {
  /// Host behaviours that change the registered types a rule sees.
  public struct Options: Hashable, Sendable {
    /// Adds `com.apple.active-webpage` to a provider offering an `http` or `https` URL when
    /// its item's user info has `supportsJavaScript = YES`, as Safari does.
    public var marksActiveWebPages: Bool
    /// Removes `public.url` from providers offering two or more types that are not active web
    /// pages, so a photo that also carries its link does not count as a web URL.
    public var prunesURLFromMultitypeProviders: Bool

    /// Creates options; both behaviours are on by default, as on Apple systems.
    public init(marksActiveWebPages: Bool = true, prunesURLFromMultitypeProviders: Bool = true) {
      self.marksActiveWebPages = marksActiveWebPages
      self.prunesURLFromMultitypeProviders = prunesURLFromMultitypeProviders
    }
  }

  /// The user-info key that marks an item whose URL a host may load as a web page.
  public static let supportsJavaScriptKey = "supportsJavaScript"

  /// Builds the matching dictionary for items.
  public static func make(
    for items: [ExtensionItem], options: Options = Options(),
    registry: UniformTypeRegistry = .system
  ) -> PropertyListValue {
    .dictionary(["extensionItems": .array(items.map { item(for: $0, options, registry) })])
  }

  private static func item(
    for item: ExtensionItem, _ options: Options, _ registry: UniformTypeRegistry
  ) -> PropertyListValue {
    var entries = item.customUserInfo.filter { !$0.key.hasPrefix("com.apple.UIKit") }
    if let title = item.attributedTitle { entries["title"] = .string(title.string) }
    if let text = item.attributedContentText { entries["contentText"] = .string(text.string) }
    let javaScript = item.customUserInfo[supportsJavaScriptKey]?.boolValue == true
    entries["attachments"] = .array(
      item.attachments.map { provider in
        var types = provider.registeredTypes.map(\.identifier)
        let isWebPage =
          options.marksActiveWebPages && javaScript && hasWebURL(provider, registry)
        if isWebPage, !types.contains(UniformType.activeWebPage.identifier) {
          types.append(UniformType.activeWebPage.identifier)
        }
        if options.prunesURLFromMultitypeProviders, types.count >= 2, !isWebPage {
          types.removeAll { UniformType($0) == .url }
        }
        return .dictionary([
          "registeredTypeIdentifiers": .array(types.map(PropertyListValue.string))
        ])
      })
    return .dictionary(entries)
  }

  private static func hasWebURL(_ provider: ItemProvider, _ registry: UniformTypeRegistry) -> Bool {
    provider.representations.contains { representation in
      guard registry.conforms(representation.type, to: .url) else { return false }
      let text: String
      switch representation.content {
      case .url(let url): text = url.absoluteString
      case .text(let string): text = string
      default: return false
      }
      let lower = UniformType.lowercasedASCII(text)
      return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }
  }

  static func items(of dictionary: PropertyListValue) -> [[String: PropertyListValue]] {
    (dictionary.dictionaryValue?["extensionItems"]?.arrayValue ?? []).compactMap(\.dictionaryValue)
  }

  static func attachmentTypes(of item: [String: PropertyListValue]) -> [[UniformType]] {
    (item["attachments"]?.arrayValue ?? []).map { attachment in
      (attachment.dictionaryValue?["registeredTypeIdentifiers"]?.arrayValue ?? []).compactMap {
        $0.stringValue.map { UniformType($0) }
      }
    }
  }
}
