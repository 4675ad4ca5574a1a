/// Running totals checked against ``ItemCodecLimits`` while a message is written or read.
struct ItemCodecBudget {
  let limits: ItemCodecLimits
  private(set) var attachments = 0
  private(set) var inlineBytes = 0

  init(_ limits: ItemCodecLimits) { self.limits = limits }

  func checkItems(_ count: Int, offset: Int?) throws(ItemCodecError) {
    guard count <= limits.maximumItemCount else {
      throw ItemCodecError(
        .tooManyItems, offset: offset,
        "more than \(limits.maximumItemCount) items (maximumItemCount)")
    }
  }

  mutating func addAttachment(offset: Int?) throws(ItemCodecError) {
    attachments += 1
    guard attachments <= limits.maximumAttachmentCount else {
      throw ItemCodecError(
        .tooManyAttachments, offset: offset,
        "more than \(limits.maximumAttachmentCount) attachments (maximumAttachmentCount)")
    }
  }

  func checkRepresentations(_ count: Int, offset: Int?) throws(ItemCodecError) {
    guard count <= limits.maximumRepresentationsPerAttachment else {
      throw ItemCodecError(
        .tooManyRepresentations, offset: offset,
        "an attachment has more than \(limits.maximumRepresentationsPerAttachment) "
          + "representations (maximumRepresentationsPerAttachment)")
    }
  }

  mutating func addInlineBytes(_ count: Int, offset: Int?) throws(ItemCodecError) {
    inlineBytes += count
    guard inlineBytes <= limits.maximumInlineBytes else {
      throw ItemCodecError(
        .tooManyInlineBytes, offset: offset,
        "more than \(limits.maximumInlineBytes) inline bytes (maximumInlineBytes); "
          + "carry large payloads as files")
    }
  }

  func checkString(_ length: Int, offset: Int?) throws(ItemCodecError) {
    guard length <= limits.maximumStringLength else {
      throw ItemCodecError(
        .stringTooLong, offset: offset,
        "a string of \(length) bytes exceeds \(limits.maximumStringLength) (maximumStringLength)")
    }
  }

  func checkDepth(_ depth: Int, offset: Int?) throws(ItemCodecError) {
    guard depth <= limits.maximumNestingDepth else {
      throw ItemCodecError(
        .nestingTooDeep, offset: offset,
        "user info nests deeper than \(limits.maximumNestingDepth) (maximumNestingDepth)")
    }
  }
}
