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
    var utf8 = string.utf8[...]
    guard let first = utf8.first, isLetter(first) else {
      return URLPayloadError(string, "is not an absolute URL (it has no scheme)")
    }
    while let byte = utf8.first, byte != UInt8(ascii: ":") {
      guard isLetter(byte) || isDigit(byte) || "+-.".utf8.contains(byte) else {
        return URLPayloadError(string, "is not an absolute URL (it has no scheme)")
      }
      utf8 = utf8.dropFirst()
    }
    guard !utf8.isEmpty else {
      return URLPayloadError(string, "is not an absolute URL (it has no scheme)")
    }
    while let byte = utf8.popFirst() {
      if byte == UInt8(ascii: "%") {
        guard let high = utf8.popFirst(), let low = utf8.popFirst(), isHexDigit(high),
          isHexDigit(low)
        else {
          return URLPayloadError(string, "has a % that is not followed by two hex digits")
        }
      } else if !isAllowedInURL(byte) {
        return URLPayloadError(string, "has a character RFC 3986 does not allow unencoded")
      }
    }
    return nil
  }

  private static func isLetter(_ byte: UInt8) -> Bool {
    (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
  }

  private static func isDigit(_ byte: UInt8) -> Bool {
    byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
  }

  private static func isHexDigit(_ byte: UInt8) -> Bool {
    isDigit(byte) || ((byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "f"))
  }

  /// RFC 3986's unreserved and reserved characters.
  private static func isAllowedInURL(_ byte: UInt8) -> Bool {
    isLetter(byte) || isDigit(byte) || "-._~:/?#[]@!$&'()*+,;=".utf8.contains(byte)
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
