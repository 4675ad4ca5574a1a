/// How a stored payload becomes the kind a consumer asked for: the provider's coercion table.
///
/// `NSItemProvider` coerces between object classes (a URL read as data yields the URL's
/// contents); this table is the explicit Linux equivalent over the four payload kinds.
/// Rows are the stored kind, columns the requested kind:
///
/// | stored \ requested | data | file | URL | text |
/// |---|---|---|---|---|
/// | data | as is | written to a new file | UTF-8, parsed as a URL | UTF-8 decoded |
/// | file | contents read | the file itself | the file's URL | contents, UTF-8 decoded |
/// | URL | `file` URL: contents read; other: the URL's UTF-8 string | `file` URL: that file; other: unavailable | as is | the URL's absolute string |
/// | text | UTF-8 encoded | written to a new file | parsed as a URL | as is |
///
/// A lazy representation's payload is coerced the same way once its handler produced it.
///
/// Failures carry `NSItemProvider`'s codes: ``ItemProviderError/Code/itemUnavailable``
/// when no type conforms or a referenced file is missing,
/// ``ItemProviderError/Code/unexpectedValueClass`` when bytes are not UTF-8 or text is not a
/// URL, ``ItemProviderError/Code/unavailableCoercion`` for a non-`file` URL requested as a
/// file (no network I/O is ever done).
public enum ItemCoercion: Hashable, Sendable {
  /// The payload is returned as stored.
  case identity
  /// The referenced file's bytes are read.
  case readContents
  /// The payload is written to a new file in the caller's directory.
  case writeTemporaryFile
  /// Bytes are decoded as UTF-8, or text is encoded as UTF-8.
  case utf8
  /// The payload is read as text and parsed as an absolute URL.
  case parseURL
  /// A URL becomes its absolute string.
  case urlString
  /// A file path becomes a `file` URL.
  case fileURL
  /// A `file` URL is followed to its file; any other URL gives `unavailableCoercion`.
  case followFileURL

  /// The coercion used to load a payload stored as `stored` in the form `requested`.
  public static func from(
    _ stored: ItemRepresentation.Kind, to requested: ItemRepresentation.Kind
  ) -> ItemCoercion {
    switch (stored, requested) {
    case (.data, .data), (.file, .file), (.url, .url), (.text, .text): return .identity
    case (.data, .file), (.text, .file): return .writeTemporaryFile
    case (.data, .text), (.text, .data): return .utf8
    case (.data, .url), (.text, .url): return .parseURL
    case (.file, .data), (.file, .text): return .readContents
    case (.file, .url): return .fileURL
    case (.url, .text): return .urlString
    case (.url, .data), (.url, .file): return .followFileURL
    }
  }
}
