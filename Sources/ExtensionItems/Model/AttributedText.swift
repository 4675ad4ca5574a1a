public import Foundation

/// Text with an optional rich form: what `NSAttributedString` carries for an item's title
/// and content text.
///
/// Linux has no RTF writer or reader, so the plain text is always present and the rich form
/// is carried as opaque bytes tagged by their type (`public.rtf`, `com.apple.rtfd`,
/// `public.html`, ...). Nothing here interprets the rich bytes.
public struct AttributedText: Hashable, Sendable {
  /// The text without formatting (`NSAttributedString.string`).
  public var string: String
  /// The formatted form, if there is one.
  public var richText: RichText?

  /// A formatted form of the text: bytes and the type that says how to read them.
  public struct RichText: Hashable, Sendable {
    /// The format of ``data``, for example `public.rtf`.
    public var type: UniformType
    /// The formatted bytes.
    public var data: Data

    /// Creates a rich form.
    public init(type: UniformType, data: Data) {
      self.type = type
      self.data = data
    }
  }

  /// Creates text with an optional rich form.
  public init(_ string: String, richText: RichText? = nil) {
    self.string = string
    self.richText = richText
  }
}

extension AttributedText: ExpressibleByStringLiteral {
  /// Creates plain text from a literal.
  public init(stringLiteral value: String) { self.init(value) }
}

extension AttributedText: CustomStringConvertible {
  /// The plain text.
  public var description: String { string }
}
