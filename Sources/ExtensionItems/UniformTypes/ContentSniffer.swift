/// Types a file from its first bytes (magic numbers), for files whose name says nothing or
/// the wrong thing.
///
/// The signatures (`Protocol/desktop-entries.md` §3.1):
///
/// | bytes at offset 0 | type |
/// |---|---|
/// | `89 50 4E 47` (`\x89PNG`) | `public.png` |
/// | `FF D8 FF` | `public.jpeg` |
/// | `GIF87a`, `GIF89a` | `com.compuserve.gif` |
/// | `%PDF-` | `com.adobe.pdf` |
/// | `RIFF` `????` `WEBP` | `org.webmproject.webp` |
/// | `II*\0`, `MM\0*` | `public.tiff` |
/// | `????` `ftyp` + brand `heic`/`heix`/`mif1`... | `public.heic`; `qt  `: `com.apple.quicktime-movie`; `M4A `: `public.mpeg-4-audio`; other brands: `public.mpeg-4` |
/// | `PK\x03\x04`, `PK\x05\x06` | `com.pkware.zip-archive` (a container: the name decides when it has one) |
/// | UTF-8 or UTF-16 byte-order mark | `public.utf8-plain-text`, `public.utf16-plain-text` |
/// | valid UTF-8 without NUL or other C0 controls but tab, line feed, vertical tab, form feed, carriage return and escape | `public.utf8-plain-text` |
public enum ContentSniffer {
  /// How many leading bytes ``evidence(ofPrefix:isWholeFile:)`` looks at.
  public static let prefixLength = 4096

  /// What the content shows.
  public struct Evidence: Hashable, Sendable {
    /// The type the bytes show.
    public var type: UniformType
    /// How strong the evidence is.
    public var kind: Kind

    /// The strength of evidence.
    public enum Kind: Hashable, Sendable {
      /// A signature that only this format has.
      case signature
      /// A container format many others are built on (zip).
      case container
      /// Bytes that read as text.
      case text
    }
  }

  /// What the leading bytes of a file show, or `nil` when they show nothing known (an
  /// empty file shows nothing).
  ///
  /// - Parameters:
  ///   - prefix: The file's first bytes (``prefixLength`` or all of a shorter file).
  ///   - isWholeFile: Whether `prefix` is the whole file; when not, a UTF-8 character cut
  ///     at the end of the prefix still reads as text.
  public static func evidence(ofPrefix prefix: some Collection<UInt8>, isWholeFile: Bool)
    -> Evidence?
  {
    let bytes = Array(prefix.prefix(prefixLength))
    guard !bytes.isEmpty else { return nil }
    func starts(_ signature: String, at offset: Int = 0) -> Bool {
      let utf8 = Array(signature.utf8)
      return bytes.count >= offset + utf8.count
        && Array(bytes[offset..<offset + utf8.count]) == utf8
    }
    func signature(_ type: UniformType) -> Evidence { Evidence(type: type, kind: .signature) }
    if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return signature(.png) }
    if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return signature(.jpeg) }
    if starts("GIF87a") || starts("GIF89a") { return signature("com.compuserve.gif") }
    if starts("%PDF-") { return signature(.pdf) }
    if starts("RIFF") && starts("WEBP", at: 8) { return signature("org.webmproject.webp") }
    if bytes.starts(with: [0x49, 0x49, 0x2A, 0x00]) || bytes.starts(with: [0x4D, 0x4D, 0x00, 0x2A])
    {
      return signature("public.tiff")
    }
    if starts("ftyp", at: 4), bytes.count >= 12 {
      let brand = String(decoding: bytes[8..<12], as: UTF8.self)
      switch brand {
      case "heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1": return signature(.heic)
      case "qt  ": return signature("com.apple.quicktime-movie")
      case "M4A ": return signature("public.mpeg-4-audio")
      default: return signature(.mpeg4Movie)
      }
    }
    if bytes.starts(with: [0x50, 0x4B, 0x03, 0x04]) || bytes.starts(with: [0x50, 0x4B, 0x05, 0x06])
    {
      return Evidence(type: .zip, kind: .container)
    }
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
      return Evidence(type: .utf8PlainText, kind: .text)
    }
    if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) {
      return Evidence(type: .utf16PlainText, kind: .text)
    }
    return isText(bytes, isWholeFile: isWholeFile)
      ? Evidence(type: .utf8PlainText, kind: .text) : nil
  }

  /// Whether bytes are UTF-8 text: valid UTF-8 (a character cut by the end of a prefix
  /// allowed), no NUL, and no C0 control but tab, LF, VT, FF, CR and ESC.
  static func isText(_ bytes: [UInt8], isWholeFile: Bool) -> Bool {
    for byte in bytes where byte < 0x20 || byte == 0x7F {
      switch byte {
      case 0x09...0x0D, 0x1B: continue
      default: return false
      }
    }
    if String(validating: bytes, as: UTF8.self) != nil { return true }
    guard !isWholeFile else { return false }
    // A prefix may end inside a character: drop up to three trailing bytes of it.
    var end = bytes.count
    while end > 0, bytes.count - end < 3, bytes[end - 1] & 0xC0 == 0x80 { end -= 1 }
    if end > 0, bytes[end - 1] >= 0xC0 { end -= 1 }
    return end < bytes.count && String(validating: bytes[..<end], as: UTF8.self) != nil
  }

  /// The type of a file from its name and its first bytes: the name's type, unless the
  /// content shows the name is missing or wrong.
  ///
  /// - The name gives no type (no extension, an unknown one, or `public.data`): the
  ///   content's type, else `public.data`.
  /// - The content shows nothing: the name's type.
  /// - The name's type conforms to the content's (`m4a` for an MPEG-4 signature, `json` for
  ///   text): the name's, which is more precise.
  /// - A zip signature: the name's (documents, archives and packages are zip files).
  /// - Text, and the name's type is one with a signature (a `.png` holding text): text.
  ///   Other names of text (`.svg`, `.plist`) keep their type.
  /// - A signature the name contradicts (a `.jpg` that is a PNG): the content's type.
  public static func type(
    forFileName name: Substring, prefix: some Collection<UInt8>, isWholeFile: Bool,
    registry: UniformTypeRegistry = .system
  ) -> UniformType {
    var byName: UniformType? = registry.type(forFileName: name)
    if let type = byName, type.isDynamic || type == .data { byName = nil }
    let evidence = evidence(ofPrefix: prefix, isWholeFile: isWholeFile)
    guard let byName else { return evidence?.type ?? .data }
    guard let evidence, !registry.conforms(byName, to: evidence.type) else { return byName }
    switch evidence.kind {
    case .container: return byName
    case .text: return hasSignature(byName, registry: registry) ? evidence.type : byName
    case .signature: return evidence.type
    }
  }

  /// The types a signature identifies.
  private static let signatureTypes: [UniformType] = [
    .png, .jpeg, "com.compuserve.gif", .pdf, "org.webmproject.webp", "public.tiff", .heic,
    "com.apple.quicktime-movie", .mpeg4Movie,
  ]

  private static func hasSignature(_ type: UniformType, registry: UniformTypeRegistry) -> Bool {
    signatureTypes.contains { registry.conforms(type, to: $0) }
  }
}
