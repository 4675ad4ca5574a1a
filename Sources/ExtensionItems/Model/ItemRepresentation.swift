public import Foundation

/// One registered form of a provider's payload: a type and where its bytes are.
///
/// Mirrors one `registerDataRepresentation` / `registerFileRepresentation` /
/// `registerObject` call on `NSItemProvider`. The payload is inline data, a file carried by
/// reference, a URL, or text.
public struct ItemRepresentation: Hashable, Sendable {
  /// The type of the payload, for example `public.jpeg`.
  public var type: UniformType
  /// Which processes may see the representation.
  public var visibility: Visibility
  /// The payload.
  public var content: Content

  /// Creates a representation.
  public init(type: UniformType, visibility: Visibility = .all, content: Content) {
    self.type = type
    self.visibility = visibility
    self.content = content
  }

  /// Where a representation's payload is.
  public enum Content: Hashable, Sendable {
    /// Bytes carried inline.
    case data(Data)
    /// A file carried by reference: an absolute path, or a path relative to the directory the
    /// item is stored in (the loader's `baseDirectory`).
    case file(path: String)
    /// A URL (`NSURL`).
    case url(URL)
    /// Text (`NSString`).
    case text(String)

    /// The kind of payload.
    public var kind: Kind {
      switch self {
      case .data: return .data
      case .file: return .file
      case .url: return .url
      case .text: return .text
      }
    }
  }

  /// The URL a `url` payload string names, or the reason it names none.
  ///
  /// A URL payload is an absolute URI as RFC 3986 spells it (``urlPayloadProblem(_:)``), and
  /// Foundation must read it as written: the URL's `absoluteString` is the payload string, so
  /// a payload reads back, and writes out, exactly as it was sent. The binary codec and the
  /// JSON mapping apply the same rule in both directions.
  static func payloadURL(_ string: String) -> Result<URL, URLPayloadError> {
    if let problem = urlPayloadProblem(string) { return .failure(problem) }
    guard let url = URL(string: string, encodingInvalidCharacters: false),
      url.absoluteString == string
    else {
      return .failure(URLPayloadError(string, "is not a URL Foundation reads as written"))
    }
    return .success(url)
  }

  /// Why `string` is not an absolute URI as RFC 3986 spells it, or `nil` when it is: a
  /// scheme (a letter, then letters, digits, `+`, `-` or `.`) and a colon, then only
  /// characters RFC 3986 allows unencoded (letters, digits and `-._~:/?#[]@!$&'()*+,;=`; no
  /// space, no non-ASCII), with each `%` followed by two hex digits.
  ///
  /// The encoder checks the strings of the `URL` values it writes with this alone; it is a
  /// scan of the bytes, much cheaper than parsing the URL again.
  static func urlPayloadProblem(_ string: String) -> URLPayloadError? {
    let noScheme = "is not an absolute URL (it has no scheme)"
    var text = string
    let reason: String? = text.withUTF8 { utf8 in
      var index = 0
      guard let first = utf8.first, isLetter(first) else { return noScheme }
      while index < utf8.count, utf8[index] != UInt8(ascii: ":") {
        guard isIn(utf8[index], low: schemeLow, high: schemeHigh) else { return noScheme }
        index += 1
      }
      guard index < utf8.count else { return noScheme }
      while index < utf8.count {
        let byte = utf8[index]
        if byte == UInt8(ascii: "%") {
          guard index + 2 < utf8.count, isHexDigit(utf8[index + 1]), isHexDigit(utf8[index + 2])
          else { return "has a % that is not followed by two hex digits" }
          index += 3
        } else {
          guard isIn(byte, low: allowedLow, high: allowedHigh) else {
            return "has a character RFC 3986 does not allow unencoded"
          }
          index += 1
        }
      }
      return nil
    }
    return reason.map { URLPayloadError(string, $0) }
  }

  // Sets of ASCII bytes as two 64-bit masks (bytes 0-63, 64-127).
  /// Letters, digits, `+`, `-` and `.`: the characters after a scheme's first letter.
  private static let schemeLow: UInt64 = 0x03ff_6800_0000_0000
  private static let schemeHigh: UInt64 = 0x07ff_fffe_07ff_fffe
  /// RFC 3986's unreserved and reserved characters: letters, digits, `-._~:/?#[]@!$&'()*+,;=`.
  private static let allowedLow: UInt64 = 0xafff_ffda_0000_0000
  private static let allowedHigh: UInt64 = 0x47ff_fffe_afff_ffff

  @inline(__always)
  private static func isIn(_ byte: UInt8, low: UInt64, high: UInt64) -> Bool {
    byte < 64 ? low >> byte & 1 == 1 : byte < 128 && high >> (byte - 64) & 1 == 1
  }

  private static func isLetter(_ byte: UInt8) -> Bool {
    (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
  }

  private static func isHexDigit(_ byte: UInt8) -> Bool {
    (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
      || ((byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "f"))
  }

  /// Why a string is not a URL payload, quoting at most 200 Unicode scalars of it.
  struct URLPayloadError: Error {
    let message: String

    init(_ string: String, _ reason: String) {
      let scalars = string.unicodeScalars
      let shown = scalars.count > 200 ? String(scalars.prefix(200)) + "…" : string
      message =
        "\"\(shown)\" \(reason); a URL payload is an absolute URL with spaces and "
        + "non-ASCII characters percent-encoded"
    }
  }

  /// The four kinds of payload, and the four forms a consumer can load.
  public enum Kind: UInt8, Hashable, Sendable, CaseIterable {
    /// Inline bytes.
    case data = 1
    /// A file.
    case file = 2
    /// A URL.
    case url = 3
    /// Text.
    case text = 4
  }

  /// `NSItemProviderRepresentationVisibility`: which processes may load a representation.
  public struct Visibility: RawRepresentable, Hashable, Sendable {
    /// The raw value, as in `NSItemProviderRepresentationVisibility`.
    public var rawValue: UInt32
    /// Creates a visibility from its raw value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Visible to every process (`All`, 0).
    public static let all = Visibility(rawValue: 0)
    /// Visible to processes of the same team (`Team`, 1; iOS only on Apple systems).
    public static let team = Visibility(rawValue: 1)
    /// Visible to processes of the same group (`Group`, 2; macOS only on Apple systems).
    public static let group = Visibility(rawValue: 2)
    /// Visible only to the process that registered it (`OwnProcess`, 3).
    public static let ownProcess = Visibility(rawValue: 3)
  }
}
