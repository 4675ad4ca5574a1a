/// Why items could not be encoded or decoded.
///
/// Decoding errors carry the byte ``offset`` in the input where the problem was found.
public struct ItemCodecError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The error's stable code.
  public var code: Code
  /// The byte offset in the input where decoding failed; `nil` for encoding errors and JSON.
  public var offset: Int?
  /// What was wrong, naming the limit or the field involved.
  public var message: String

  /// Creates an error.
  public init(_ code: Code, offset: Int? = nil, _ message: String) {
    self.code = code
    self.offset = offset
    self.message = message
  }

  /// "<message> (at byte <offset>)".
  public var description: String {
    guard let offset else { return message }
    return "\(message) (at byte \(offset))"
  }

  /// The kinds of codec error.
  public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The raw value.
    public var rawValue: Int
    /// Creates a code from its raw value.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The input ends before the message does.
    public static let truncated = Code(rawValue: 1)
    /// Bytes follow the end of the message.
    public static let trailingBytes = Code(rawValue: 2)
    /// The fixed header is wrong: endianness, protocol version or serial.
    public static let invalidHeader = Code(rawValue: 3)
    /// The message is a valid D-Bus message but not an item message: wrong type, path,
    /// interface, member or body signature.
    public static let notAnItemMessage = Code(rawValue: 4)
    /// The body's format version is not one this decoder reads.
    public static let unsupportedVersion = Code(rawValue: 5)
    /// The bytes break a D-Bus marshalling rule: non-zero padding, a Boolean other than 0
    /// or 1, a bad signature, an array whose contents overrun its length.
    public static let malformed = Code(rawValue: 6)
    /// A string is not valid UTF-8 or contains NUL.
    public static let invalidString = Code(rawValue: 7)
    /// A well-formed value the item format does not allow: an unknown payload kind, a URL
    /// that does not parse, a reserved user-info key, an unsupported user-info value type,
    /// more than one title.
    public static let invalidValue = Code(rawValue: 8)
    /// More items than ``ItemCodecLimits/maximumItemCount``.
    public static let tooManyItems = Code(rawValue: 9)
    /// More attachments than ``ItemCodecLimits/maximumAttachmentCount``.
    public static let tooManyAttachments = Code(rawValue: 10)
    /// A provider has more representations than
    /// ``ItemCodecLimits/maximumRepresentationsPerAttachment``.
    public static let tooManyRepresentations = Code(rawValue: 11)
    /// More inline bytes than ``ItemCodecLimits/maximumInlineBytes``.
    public static let tooManyInlineBytes = Code(rawValue: 12)
    /// User info nests deeper than ``ItemCodecLimits/maximumNestingDepth``.
    public static let nestingTooDeep = Code(rawValue: 13)
    /// A string is longer than ``ItemCodecLimits/maximumStringLength``.
    public static let stringTooLong = Code(rawValue: 14)
    /// The message is larger than ``ItemCodecLimits/maximumMessageSize``.
    public static let messageTooLarge = Code(rawValue: 15)
    /// The JSON text is not JSON, or not the item mapping.
    public static let invalidJSON = Code(rawValue: 16)
    /// A representation is still lazy: its payload is produced by a load handler that was
    /// not run (encoding only; load the items with ``ExtensionItem/loaded(_:)`` first).
    public static let notLoaded = Code(rawValue: 17)

    /// The code's name, for example `truncated`.
    public var description: String {
      let names = [
        "truncated", "trailingBytes", "invalidHeader", "notAnItemMessage",
        "unsupportedVersion", "malformed", "invalidString", "invalidValue", "tooManyItems",
        "tooManyAttachments", "tooManyRepresentations", "tooManyInlineBytes", "nestingTooDeep",
        "stringTooLong", "messageTooLarge", "invalidJSON", "notLoaded",
      ]
      return (1...names.count).contains(rawValue) ? names[rawValue - 1] : "code \(rawValue)"
    }
  }
}

extension ItemCodecError {
  /// A lazy representation met by an encoder: a load handler cannot be encoded.
  static func notLoaded(_ lazy: LazyRepresentation) -> ItemCodecError {
    ItemCodecError(
      .notLoaded,
      "the \(lazy.type) representation is produced by a load handler that was not run; "
        + "load the items first (ExtensionItem.loaded(_:))")
  }
}
