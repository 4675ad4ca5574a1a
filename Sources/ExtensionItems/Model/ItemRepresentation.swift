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

  /// The URL a `url` payload string names, or `nil` with the reason it names none.
  ///
  /// A URL payload is an absolute URI as RFC 3986 spells it: a scheme, and no character that
  /// would need percent-encoding (a space, non-ASCII, a `%` not followed by two hex digits).
  /// It is taken byte for byte: the URL's `absoluteString` is the payload string, so a
  /// payload reads back, and writes out, exactly as it was sent. The binary codec and the
  /// JSON mapping apply the same rule in both directions.
  static func payloadURL(_ string: String) -> Result<URL, URLPayloadError> {
    guard let url = URL(string: string, encodingInvalidCharacters: false) else {
      return .failure(URLPayloadError(string, "is not a URL as RFC 3986 spells it"))
    }
    guard url.scheme != nil else {
      return .failure(URLPayloadError(string, "is not an absolute URL (it has no scheme)"))
    }
    guard url.absoluteString == string else {
      return .failure(URLPayloadError(string, "does not read back byte for byte"))
    }
    return .success(url)
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
