/// One shared thing: a title, content text, attachments and user info (`NSExtensionItem`).
///
/// ## Properties and `userInfo`
///
/// On Apple systems the title and content text live inside `userInfo`, so whichever is set
/// last wins. This type keeps that contract, precisely:
///
/// - Reading ``userInfo`` returns the custom entries plus the reserved keys
///   ``attributedTitleKey`` and ``attributedContentTextKey`` for the properties that are set.
///   A plain ``AttributedText`` reflects as a string; one with a rich form reflects as a
///   dictionary `{"string": text, "type": uti, "data": bytes}`.
/// - Assigning ``userInfo`` replaces the custom entries **and** the title and content text:
///   each is read back from its reserved key (string, that dictionary, or bare data taken as
///   RTF with empty plain text), or becomes `nil` when the key is absent or unreadable. An
///   RTFD copy under ``rtfdAttributedTitleKey`` / ``rtfdAttributedContentTextKey`` is
///   preferred as the rich form, as Apple's getter prefers RTFD.
/// - Setting a property afterwards replaces its reserved key.
/// - Attachments are not property-list values: they are never reflected, an
///   ``attachmentsKey`` entry in an assigned dictionary is ignored, and assigning
///   ``userInfo`` leaves ``attachments`` unchanged.
public struct ExtensionItem: Hashable, Sendable {
  /// The title (`attributedTitle`).
  public var attributedTitle: AttributedText?
  /// The body text (`attributedContentText`).
  public var attributedContentText: AttributedText?
  /// The shared things, one provider each (`attachments`).
  public var attachments: [ItemProvider]
  /// The user-info entries other than the reserved keys.
  public private(set) var customUserInfo: [String: PropertyListValue]

  /// `NSExtensionItemAttributedTitleKey`.
  public static let attributedTitleKey = "NSExtensionItemAttributedTitleKey"
  /// `NSExtensionItemAttributedContentTextKey`.
  public static let attributedContentTextKey = "NSExtensionItemAttributedContentTextKey"
  /// `NSExtensionItemAttachmentsKey`.
  public static let attachmentsKey = "NSExtensionItemAttachmentsKey"
  /// `_NSExtensionItemRTFDAttributedTitleKey`: Apple's private RTFD copy of the title.
  public static let rtfdAttributedTitleKey = "_NSExtensionItemRTFDAttributedTitleKey"
  /// `_NSExtensionItemRTFDAttributedContentTextKey`: Apple's private RTFD copy of the text.
  public static let rtfdAttributedContentTextKey = "_NSExtensionItemRTFDAttributedContentTextKey"

  /// The keys ``userInfo`` reserves for the item's own properties.
  public static let reservedUserInfoKeys: Set<String> = [
    attributedTitleKey, attributedContentTextKey, attachmentsKey, rtfdAttributedTitleKey,
    rtfdAttributedContentTextKey,
  ]

  /// Creates an item.
  ///
  /// `userInfo` is assigned first, so a title or content text passed here wins over one found
  /// under a reserved key of `userInfo`.
  public init(
    attributedTitle: AttributedText? = nil,
    attributedContentText: AttributedText? = nil,
    attachments: [ItemProvider] = [],
    userInfo: [String: PropertyListValue] = [:]
  ) {
    self.attachments = attachments
    self.customUserInfo = [:]
    self.userInfo = userInfo
    if let attributedTitle { self.attributedTitle = attributedTitle }
    if let attributedContentText { self.attributedContentText = attributedContentText }
  }

  /// The user info, with the title and content text reflected under their reserved keys.
  ///
  /// See the type's documentation for the precedence between properties and `userInfo`.
  public var userInfo: [String: PropertyListValue] {
    get {
      var result = customUserInfo
      if let attributedTitle { result[Self.attributedTitleKey] = attributedTitle.reflected }
      if let attributedContentText {
        result[Self.attributedContentTextKey] = attributedContentText.reflected
      }
      return result
    }
    set {
      attributedTitle = AttributedText(
        reflected: newValue[Self.attributedTitleKey], rtfd: newValue[Self.rtfdAttributedTitleKey])
      attributedContentText = AttributedText(
        reflected: newValue[Self.attributedContentTextKey],
        rtfd: newValue[Self.rtfdAttributedContentTextKey])
      customUserInfo = newValue.filter { !Self.reservedUserInfoKeys.contains($0.key) }
    }
  }

  /// Sets one custom user-info entry; reserved keys are routed as assigning ``userInfo``
  /// with that entry changed would route them.
  public mutating func setUserInfoValue(_ value: PropertyListValue?, forKey key: String) {
    guard !Self.reservedUserInfoKeys.contains(key) else {
      var copy = userInfo
      copy[key] = value
      userInfo = copy
      return
    }
    customUserInfo[key] = value
  }
}

extension AttributedText {
  /// The form this text takes under a reserved user-info key.
  var reflected: PropertyListValue {
    guard let richText else { return .string(string) }
    return .dictionary([
      "string": .string(string), "type": .string(richText.type.identifier),
      "data": .data(richText.data),
    ])
  }

  /// Reads text back from a reserved user-info key and an optional RTFD copy.
  init?(reflected: PropertyListValue?, rtfd: PropertyListValue?) {
    switch reflected {
    case .string(let string)?:
      self.init(string)
    case .data(let data)?:
      self.init("", richText: RichText(type: .rtf, data: data))
    case .dictionary(let entries)?:
      guard case .string(let string)? = entries["string"] else { return nil }
      var rich: RichText?
      if case .string(let type)? = entries["type"], case .data(let data)? = entries["data"] {
        rich = RichText(type: UniformType(type), data: data)
      }
      self.init(string, richText: rich)
    case nil:
      guard case .data = rtfd else { return nil }
      self.init("")
    default:
      return nil
    }
    if case .data(let data)? = rtfd {
      richText = RichText(type: .rtfd, data: data)
    }
  }
}
