public import Foundation

/// A file to store next to a spool entry's payload.
///
/// Attachments keep large bytes out of the payload, as the share-extension pattern keeps
/// them out of shared defaults. The consumer receives each one as a file in the claimed
/// entry, and may move it away in its handler.
public struct SpoolAttachment: Sendable, Hashable {
  /// Where an attachment's bytes come from.
  public enum Source: Sendable, Hashable {
    /// Bytes in memory.
    case data(Data)
    /// A file to copy; the original is left in place.
    case file(URL)
  }

  /// The attachment's file name in the entry: UTF-8, at most 255 bytes, no `/`, not
  /// starting with `.`, and not `entry`.
  public var name: String
  /// The attachment's bytes.
  public var source: Source

  /// Creates an attachment.
  ///
  /// - Parameters:
  ///   - name: The file name in the entry.
  ///   - source: The bytes.
  public init(name: String, source: Source) {
    self.name = name
    self.source = source
  }

  /// An attachment with bytes from memory.
  ///
  /// - Parameters:
  ///   - data: The bytes.
  ///   - name: The file name in the entry.
  public static func data(_ data: Data, name: String) -> SpoolAttachment {
    .init(name: name, source: .data(data))
  }

  /// An attachment copied from a file.
  ///
  /// - Parameters:
  ///   - url: The file to copy.
  ///   - name: The file name in the entry; the file's own name when `nil`.
  public static func file(_ url: URL, name: String? = nil) -> SpoolAttachment {
    .init(name: name ?? url.lastPathComponent, source: .file(url))
  }
}
