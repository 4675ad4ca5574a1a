/// Checks shared items against an extension's activation rule and says which part of the
/// rule refused them.
public enum ActivationCheck {
  /// Why `rule` refuses `items`, or `nil` when it accepts them.
  ///
  /// For a dictionary rule the sentence names the key that failed: a maximum count
  /// exceeded (`NSExtensionActivationSupportsWebURLWithMaxCount is 1, but 2 web URLs were
  /// shared`), or an attachment whose type no key of the rule accepts.
  ///
  /// - Parameters:
  ///   - items: The items offered to the extension.
  ///   - rule: The manifest's `NSExtensionActivationRule`.
  ///   - registry: The uniform type graph.
  public static func refusal(
    for items: [ExtensionItem], rule: ActivationRule, registry: UniformTypeRegistry = .system
  ) -> String? {
    if rule.evaluate(items, registry: registry) { return nil }
    guard case .dictionary(let dictionary) = rule else {
      return "The activation predicate (\(rule)) is false for the shared items."
    }
    let attachments = attachmentTypes(MatchingDictionary.make(for: items, registry: registry))
    if attachments.isEmpty {
      return "Nothing to share: the rule needs at least one attachment or some text."
    }
    let value = { (key: ActivationKey) in dictionary.value(for: key) }
    for key in ActivationKey.all where !key.isBoolean {
      guard let maximum = value(key), maximum > 0 else { continue }
      let count = attachments.filter { key.counts(attachmentTypes: $0, in: registry) }.count
      if Int64(count) > maximum {
        return "\(key.name) is \(maximum), but \(count) \(noun(key)) were shared."
      }
    }
    let accepted = ActivationKey.all.filter { (value($0) ?? 0) > 0 }
    for (index, types) in attachments.enumerated()
    where !accepted.contains(where: { $0.counts(attachmentTypes: types, in: registry) }) {
      let shown = types.map(\.identifier).joined(separator: ", ")
      let needed = preference.first { $0.counts(attachmentTypes: types, in: registry) }
      let because =
        needed.map { key in
          value(key) == 0
            ? "\(key.name) is 0"
            : "the rule has no \(key.name)"
        } ?? "no key of the rule counts its type"
      return "Attachment \(index + 1) (\(shown)) is not accepted: \(because)."
    }
    return "The shared items do not satisfy the activation rule."
  }

  /// Keys from the most specific to the most general, to name the one an attachment needs.
  private static let preference: [ActivationKey] = [
    .image, .movie, .webPage, .webURL, .text, .file, .attachments,
  ]

  private static func noun(_ key: ActivationKey) -> String {
    switch key.name {
    case ActivationKey.webURL.name: "web URLs"
    case ActivationKey.webPage.name: "web pages"
    case ActivationKey.image.name: "images"
    case ActivationKey.movie.name: "movies"
    case ActivationKey.file.name: "files"
    default: "attachments"
    }
  }

  /// The registered types of every attachment, as the matching dictionary lists them.
  private static func attachmentTypes(_ matching: PropertyListValue) -> [[UniformType]] {
    let items = matching.dictionaryValue?["extensionItems"]?.arrayValue ?? []
    return items.flatMap { item in
      (item.dictionaryValue?["attachments"]?.arrayValue ?? []).map { attachment in
        (attachment.dictionaryValue?["registeredTypeIdentifiers"]?.arrayValue ?? [])
          .compactMap { $0.stringValue.map { UniformType($0) } }
      }
    }
  }
}
