/// Bounds on what the codec writes and accepts, so hostile input cannot exhaust memory.
///
/// Every limit is checked while encoding and while decoding (binary and JSON), and each has
/// its own ``ItemCodecError/Code``. Decoding allocates at most a small constant times the
/// input size, and the input size is bounded by ``maximumMessageSize``.
public struct ItemCodecLimits: Hashable, Sendable {
  /// The largest encoded message, in bytes.
  ///
  /// At most 128 MiB, the D-Bus maximum.
  public var maximumMessageSize: Int
  /// The most items in one message.
  public var maximumItemCount: Int
  /// The most attachments in one message, summed over its items.
  public var maximumAttachmentCount: Int
  /// The most representations in one attachment.
  public var maximumRepresentationsPerAttachment: Int
  /// The most inline bytes in one message: representation data, rich text and user-info data.
  public var maximumInlineBytes: Int
  /// How deeply user-info values may nest.
  ///
  /// 1 allows a flat array or dictionary as a value. At most 16, which keeps every message
  /// within the D-Bus limit of 64 nested containers.
  public var maximumNestingDepth: Int
  /// The longest string, in UTF-8 bytes (titles, text payloads, URLs, keys, values).
  public var maximumStringLength: Int

  /// Creates limits.
  public init(
    maximumMessageSize: Int = 32 * 1_048_576,
    maximumItemCount: Int = 128,
    maximumAttachmentCount: Int = 512,
    maximumRepresentationsPerAttachment: Int = 32,
    maximumInlineBytes: Int = 16 * 1_048_576,
    maximumNestingDepth: Int = 16,
    maximumStringLength: Int = 1_048_576
  ) {
    self.maximumMessageSize = min(maximumMessageSize, 128 * 1_048_576)
    self.maximumItemCount = maximumItemCount
    self.maximumAttachmentCount = maximumAttachmentCount
    self.maximumRepresentationsPerAttachment = maximumRepresentationsPerAttachment
    self.maximumInlineBytes = maximumInlineBytes
    self.maximumNestingDepth = min(maximumNestingDepth, 16)
    self.maximumStringLength = maximumStringLength
  }

  /// The default limits.
  public static let `default` = ItemCodecLimits()
}
