/// The dictionary form of `NSExtensionActivationRule`, with Apple's version 1 (strict) and
/// version 2 (fuzzy) semantics.
///
/// Strict matching applies when `NSExtensionActivationUsesStrictMatching` is true or the
/// version is below 2 (a missing version counts as 0). Each ``ActivationKey`` is visited from
/// the root (Attachments) down, with its value read by ``value(for:)`` (`YES` is 1, `"2"` is 2):
///
/// - **value > 0**: at most that many counted attachments (no maximum for the Boolean Text
///   key); the key is *accepted*.
/// - **absent or negative, and fuzzy or the parent is accepted**: no constraint.
/// - **otherwise** (explicit 0, or absent in strict mode under an unaccepted parent): not
///   accepted; in fuzzy mode no counted attachment may appear unless it also counts for an
///   accepted child key.
///
/// Then strict mode requires **every** attachment to count for some accepted key, fuzzy mode
/// **at least one**. Counts are summed across all items. With no attachments at all, the
/// rule activates only when Text is accepted and some item has non-empty content text.
/// `NSExtensionActivationSupportsAttachmentsWithMinCount` adds a minimum on all attachments.
public struct ActivationDictionary: Hashable, Sendable {
  /// The dictionary's entries as written in the manifest.
  public var entries: [String: PropertyListValue]

  /// Creates a rule from a manifest's dictionary.
  public init(_ entries: [String: PropertyListValue]) { self.entries = entries }

  /// `NSExtensionActivationDictionaryVersion`, read as ``integer(_:)`` does; 0 when absent.
  public var version: Int64 { integer(ActivationKey.dictionaryVersionName) ?? 0 }

  /// Whether matching is strict: `UsesStrictMatching` is true, or the version is below 2.
  public var usesStrictMatching: Bool {
    boolean(ActivationKey.usesStrictMatchingName) == true || version < 2
  }

  /// A key's value as evaluation reads it: ``integer(_:)``, except that a string for the
  /// Boolean Text key is read by ``boolean(_:)`` (`"YES"` is 1).
  public func value(for key: ActivationKey) -> Int64? {
    if key.isBoolean, case .string? = entries[key.name] {
      return boolean(key.name).map { $0 ? 1 : 0 }
    }
    return integer(key.name)
  }

  /// An entry read as Apple reads counts and versions, with `intValue`.
  ///
  /// A number is its value (reals truncated toward zero, `YES` 1, `NO` 0). A string is read as
  /// `NSString.intValue` reads it: leading white space, an optional sign and the digits that
  /// follow, saturating at the 32-bit limits; a string that does not start with a number
  /// (`"many"`, `""`) is 0. Any other value (a date, data, an array or a dictionary) counts
  /// as absent, as does a missing entry.
  public func integer(_ name: String) -> Int64? {
    guard let value = entries[name] else { return nil }
    guard case .string(let text) = value else { return value.integerValue }
    var scalars = Substring(text).unicodeScalars.drop { $0.properties.isWhitespace }
    var negative = false
    if let sign = scalars.first, sign == "+" || sign == "-" {
      negative = sign == "-"
      scalars = scalars.dropFirst()
    }
    var magnitude: Int64 = 0
    for scalar in scalars {
      guard ("0"..."9").contains(scalar) else { break }
      magnitude = min(magnitude * 10 + Int64(scalar.value - 0x30), Int64(Int32.max) + 1)
    }
    return negative ? -magnitude : min(magnitude, Int64(Int32.max))
  }

  /// An entry read as Apple reads Booleans, with `boolValue`.
  ///
  /// A number is true when it is not zero. A string is read as `NSString.boolValue` reads it:
  /// after leading white space, an optional sign and leading zeros, true when the next
  /// character is `Y`, `y`, `T`, `t` or a digit 1 to 9 (`"YES"`, `"true"`, `"1"`), false
  /// otherwise. Any other value counts as absent, as does a missing entry.
  public func boolean(_ name: String) -> Bool? {
    guard let value = entries[name] else { return nil }
    guard case .string(let text) = value else { return value.boolValue }
    var scalars = Substring(text).unicodeScalars.drop { $0.properties.isWhitespace }
    if let sign = scalars.first, sign == "+" || sign == "-" { scalars = scalars.dropFirst() }
    guard let first = scalars.drop(while: { $0 == "0" }).first else { return false }
    return "YyTt123456789".unicodeScalars.contains(first)
  }

  /// Decides whether the rule activates for a matching dictionary
  /// (`{"extensionItems": [{"attachments": [{"registeredTypeIdentifiers": [...]}]}]}`).
  public func evaluate(
    matchingDictionary: PropertyListValue, registry: UniformTypeRegistry = .system
  ) -> Bool {
    let items = MatchingDictionary.items(of: matchingDictionary)
    let attachments = items.flatMap(MatchingDictionary.attachmentTypes(of:))
    let strict = usesStrictMatching

    if let minimum = integer(ActivationKey.attachmentsMinimumCountName),
      Int64(attachments.count) < minimum
    {
      return false
    }

    var accepted: [ActivationKey] = []
    var constraintsHold = true
    func children(of key: ActivationKey) -> [ActivationKey] {
      ActivationKey.all.filter { $0.parent == key.name }
    }
    func visit(_ key: ActivationKey, parentAccepted: Bool) -> Bool {
      let value = value(for: key)
      if let value, value > 0 {
        accepted.append(key)
        if !key.isBoolean {
          let count = attachments.filter { key.counts(attachmentTypes: $0, in: registry) }.count
          if Int64(count) > value { constraintsHold = false }
        }
        for child in children(of: key) { _ = visit(child, parentAccepted: true) }
        return true
      }
      if (value == nil || value! < 0) && (!strict || parentAccepted) {
        for child in children(of: key) { _ = visit(child, parentAccepted: parentAccepted) }
        return false
      }
      var acceptedChildren: [ActivationKey] = []
      for child in children(of: key) where visit(child, parentAccepted: false) {
        acceptedChildren.append(child)
      }
      if !strict {
        let rejected = attachments.contains { types in
          key.counts(attachmentTypes: types, in: registry)
            && !acceptedChildren.contains { $0.counts(attachmentTypes: types, in: registry) }
            && !(parentAccepted && parentCounts(key, types, registry))
        }
        if rejected { constraintsHold = false }
      }
      return false
    }
    _ = visit(.attachments, parentAccepted: false)
    guard constraintsHold else { return false }

    if attachments.isEmpty {
      return accepted.contains(.text)
        && items.contains { !($0["contentText"]?.stringValue ?? "").isEmpty }
    }
    let countsForAccepted = { (types: [UniformType]) in
      accepted.contains { $0.counts(attachmentTypes: types, in: registry) }
    }
    return strict
      ? attachments.allSatisfy(countsForAccepted) : attachments.contains(where: countsForAccepted)
  }

  private func parentCounts(
    _ key: ActivationKey, _ types: [UniformType], _ registry: UniformTypeRegistry
  ) -> Bool {
    guard let parent = ActivationKey.all.first(where: { $0.name == key.parent }) else {
      return false
    }
    return parent.counts(attachmentTypes: types, in: registry)
  }
}
