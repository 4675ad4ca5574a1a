public import DBusCodec

/// A bus name: a unique connection name such as `:1.42` or a well-known name such as
/// `org.notifybus.Notify1`.
///
/// Valid: `org.freedesktop.DBus`, `org.example.has-dash`, `:1.7`.
/// Invalid: `org` (one element), `1org.example` (element starts with a digit),
/// `org..example` (empty element), `org.example/x` (character not allowed), names over
/// 255 bytes.
public struct BusName: ValidatedName {
  public let rawValue: String
  public init(unchecked string: String) { rawValue = string }
  public static var kind: String { "bus name" }

  /// Whether this is a unique connection name (it starts with `:`).
  public var isUnique: Bool { rawValue.utf8.first == UInt8(ascii: ":") }

  /// The bus itself, `org.freedesktop.DBus`.
  public static let bus: BusName = "org.freedesktop.DBus"

  public static func violation(in string: String) -> String? {
    let bytes = string.utf8
    if bytes.first == UInt8(ascii: ":") {
      if bytes.count > NameGrammar.maximumNameLength {
        return "is \(bytes.count) bytes long; the limit is \(NameGrammar.maximumNameLength)"
      }
      return NameGrammar.dottedNameViolation(
        bytes.dropFirst(), minimumElements: 2, allowHyphen: true, allowLeadingDigit: true)
    }
    return NameGrammar.dottedNameViolation(
      bytes, minimumElements: 2, allowHyphen: true, allowLeadingDigit: false)
  }
}
