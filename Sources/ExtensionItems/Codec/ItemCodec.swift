public import Foundation

/// The canonical binary encoding of extension items: one marshalled D-Bus signal message.
///
/// Any D-Bus implementation can read the bytes (`g_dbus_message_new_from_blob`,
/// `dbus_message_demarshal`), and the same bytes can ride on a bus. The layout is specified
/// in `Protocol/item-codec.md`:
///
/// - a `SIGNAL` in little-endian byte order (`l`), serial 1, flag `NO_REPLY_EXPECTED`;
/// - header fields `PATH` ``objectPath``, `INTERFACE` ``interface``, `MEMBER` ``member`` and
///   `SIGNATURE` ``bodySignature``, in that order;
/// - a body of the format version (``formatVersion``), the items, and an extension
///   dictionary that version 1 writes empty and readers ignore.
///
/// The encoder and decoder are written in Swift against the wire format; no D-Bus library
/// is involved.
public enum ItemCodec {
  /// The body format version this codec writes and reads.
  public static let formatVersion: UInt32 = 1
  /// The message's `PATH` header field.
  public static let objectPath = "/org/notifybus/Items1"
  /// The message's `INTERFACE` header field.
  public static let interface = "org.notifybus.Items1"
  /// The message's `MEMBER` header field.
  public static let member = "Items"
  /// The body signature: version, items, extensions.
  ///
  /// An item is `(title, contentText, attachments, userInfo)` where each text is an array of
  /// zero or one `(string, rich)` and `rich` an array of zero or one `(type, bytes)`; an
  /// attachment is `(suggestedName?, (width, height), representations)`; a representation is
  /// `(type, kind, visibility, string, bytes)`.
  public static let bodySignature = "ua(a(sa(say))a(sa(say))a(as(dd)a(syusay))a{sv})a{sv}"

  static let bodySignatureLiteral: StaticString =
    "ua(a(sa(say))a(sa(say))a(as(dd)a(syusay))a{sv})a{sv}"
  static let objectPathLiteral: StaticString = "/org/notifybus/Items1"
  static let interfaceLiteral: StaticString = "org.notifybus.Items1"
  static let memberLiteral: StaticString = "Items"

  /// Encodes items as one D-Bus message.
  ///
  /// - Throws: ``ItemCodecError`` when a limit is exceeded or a string contains NUL (which a
  ///   D-Bus string cannot carry).
  public static func encode(_ items: [ExtensionItem], limits: ItemCodecLimits = .default)
    throws(ItemCodecError) -> [UInt8]
  {
    var encoder = ItemEncoder(limits: limits, capacity: estimatedSize(of: items))
    return try encoder.encode(items)
  }

  /// Encodes items as one D-Bus message, as `Data`.
  public static func encodeData(_ items: [ExtensionItem], limits: ItemCodecLimits = .default)
    throws(ItemCodecError) -> Data
  {
    Data(try encode(items, limits: limits))
  }

  /// Decodes items from one D-Bus message in either byte order.
  ///
  /// The message must be exactly one item message: no bytes may follow it.
  public static func decode(_ bytes: [UInt8], limits: ItemCodecLimits = .default)
    throws(ItemCodecError) -> [ExtensionItem]
  {
    try bytes.withUnsafeBytes { buffer in
      Result { () throws(ItemCodecError) in try decode(buffer, limits: limits) }
    }.get()
  }

  /// Decodes items from one D-Bus message held in `Data`.
  public static func decode(_ data: Data, limits: ItemCodecLimits = .default)
    throws(ItemCodecError) -> [ExtensionItem]
  {
    try data.withUnsafeBytes { buffer in
      Result { () throws(ItemCodecError) in try decode(buffer, limits: limits) }
    }.get()
  }

  /// `withUnsafeBytes` rethrows untyped, so the typed error travels out in a `Result`.
  private static func decode(_ buffer: UnsafeRawBufferPointer, limits: ItemCodecLimits)
    throws(ItemCodecError) -> [ExtensionItem]
  {
    var decoder = ItemDecoder(limits: limits)
    return try decoder.decode(buffer)
  }

  /// A generous guess at the encoded size, so the output buffer rarely grows.
  static func estimatedSize(of items: [ExtensionItem]) -> Int {
    var size = 160
    for item in items {
      size += 64
      size += (item.attributedTitle?.string.utf8.count ?? 0) + 48
      size += (item.attributedContentText?.string.utf8.count ?? 0) + 48
      size += (item.attributedTitle?.richText?.data.count ?? 0)
      size += (item.attributedContentText?.richText?.data.count ?? 0)
      for provider in item.attachments {
        size += 48 + (provider.suggestedName?.utf8.count ?? 0)
        for representation in provider.representations {
          size += 40 + representation.type.identifier.utf8.count
          switch representation.content {
          case .data(let data): size += data.count
          case .file(let path): size += path.utf8.count
          case .url(let url): size += url.absoluteString.utf8.count
          case .text(let text): size += text.utf8.count
          }
        }
      }
      if !item.customUserInfo.isEmpty { size += 64 * item.customUserInfo.count }
    }
    return size
  }
}
