/// One `NSExtensionActivationSupports…` key and the attachments it counts: the published
/// key-to-types mapping of the dictionary form.
///
/// Apple does not document which types each key counts. This mapping is ours, chosen from
/// the key names and Apple's grouping, and is the contract (`Protocol/activation-rules.md`).
/// A registered type is matched against ``typeRules`` in order: the first rule whose type it
/// conforms to decides whether it counts. An attachment counts for a key when any of its
/// (pruned) registered types counts.
public struct ActivationKey: Hashable, Sendable {
  /// The `Info.plist` key, for example `NSExtensionActivationSupportsImageWithMaxCount`.
  public var name: String
  /// The key whose accepted types make this one's absence harmless: File for Image and Movie,
  /// Attachments for every other key.
  public var parent: String?
  /// Whether every attachment counts, whatever its types.
  public var countsEveryAttachment: Bool
  /// Ordered rules: `(type, counts)`; the first rule a registered type conforms to decides.
  public var typeRules: [TypeRule]
  /// Whether the value is a Boolean (no maximum count) rather than a count.
  public var isBoolean: Bool

  /// One ordered rule of ``typeRules``.
  public struct TypeRule: Hashable, Sendable {
    /// The type a registered type is tested against.
    public var type: UniformType
    /// Whether a conforming registered type counts (`true`) or is excluded (`false`).
    public var counts: Bool
  }

  /// Whether a registered type counts for this key.
  public func counts(_ type: UniformType, in registry: UniformTypeRegistry = .system) -> Bool {
    if countsEveryAttachment { return true }
    for rule in typeRules where registry.conforms(type, to: rule.type) { return rule.counts }
    return false
  }

  /// Whether an attachment with these registered types counts for this key.
  public func counts(attachmentTypes types: [UniformType], in registry: UniformTypeRegistry)
    -> Bool
  {
    countsEveryAttachment || types.contains { counts($0, in: registry) }
  }

  private static func rules(_ rules: (UniformType, Bool)...) -> [TypeRule] {
    rules.map { TypeRule(type: $0.0, counts: $0.1) }
  }

  /// `NSExtensionActivationSupportsAttachmentsWithMaxCount`: every attachment.
  public static let attachments = ActivationKey(
    name: "NSExtensionActivationSupportsAttachmentsWithMaxCount", parent: nil,
    countsEveryAttachment: true, typeRules: [], isBoolean: false)
  /// `NSExtensionActivationSupportsFileWithMaxCount`: file URLs, and data or directories that
  /// are neither URLs nor text.
  public static let file = ActivationKey(
    name: "NSExtensionActivationSupportsFileWithMaxCount", parent: attachments.name,
    countsEveryAttachment: false,
    typeRules: rules(
      (.fileURL, true), (.url, false), (.text, false), (.data, true), (.directory, true)),
    isBoolean: false)
  /// `NSExtensionActivationSupportsImageWithMaxCount`: `public.image`.
  public static let image = ActivationKey(
    name: "NSExtensionActivationSupportsImageWithMaxCount", parent: file.name,
    countsEveryAttachment: false, typeRules: rules((.image, true)), isBoolean: false)
  /// `NSExtensionActivationSupportsMovieWithMaxCount`: `public.movie`.
  public static let movie = ActivationKey(
    name: "NSExtensionActivationSupportsMovieWithMaxCount", parent: file.name,
    countsEveryAttachment: false, typeRules: rules((.movie, true)), isBoolean: false)
  /// `NSExtensionActivationSupportsText`: `public.text` (a Boolean, no maximum).
  public static let text = ActivationKey(
    name: "NSExtensionActivationSupportsText", parent: attachments.name,
    countsEveryAttachment: false, typeRules: rules((.text, true)), isBoolean: true)
  /// `NSExtensionActivationSupportsWebURLWithMaxCount`: `public.url` except file URLs.
  public static let webURL = ActivationKey(
    name: "NSExtensionActivationSupportsWebURLWithMaxCount", parent: attachments.name,
    countsEveryAttachment: false, typeRules: rules((.fileURL, false), (.url, true)),
    isBoolean: false)
  /// `NSExtensionActivationSupportsWebPageWithMaxCount`: `com.apple.active-webpage`.
  public static let webPage = ActivationKey(
    name: "NSExtensionActivationSupportsWebPageWithMaxCount", parent: attachments.name,
    countsEveryAttachment: false, typeRules: rules((.activeWebPage, true)), isBoolean: false)

  /// Every counting key, parents before children.
  public static let all: [ActivationKey] = [attachments, file, image, movie, text, webURL, webPage]

  /// `NSExtensionActivationSupportsAttachmentsWithMinCount`.
  public static let attachmentsMinimumCountName =
    "NSExtensionActivationSupportsAttachmentsWithMinCount"
  /// `NSExtensionActivationDictionaryVersion`.
  public static let dictionaryVersionName = "NSExtensionActivationDictionaryVersion"
  /// `NSExtensionActivationUsesStrictMatching`.
  public static let usesStrictMatchingName = "NSExtensionActivationUsesStrictMatching"
}
