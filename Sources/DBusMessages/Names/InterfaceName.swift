public import DBusCodec

/// An interface name such as `org.notifybus.Notify1`.
///
/// Error names follow the same rules.
///
/// Valid: `org.freedesktop.DBus.Peer`, `a._b`.
/// Invalid: `org` (one element), `org.9x` (element starts with a digit), `org.a-b`
/// (hyphen), `org.` (empty element), names over 255 bytes.
public struct InterfaceName: ValidatedName {
  public let rawValue: String
  public init(unchecked string: String) { rawValue = string }
  public static var kind: String { "interface name" }

  public static func violation(in string: String) -> String? {
    NameGrammar.dottedNameViolation(
      string.utf8, minimumElements: 2, allowHyphen: false, allowLeadingDigit: false)
  }
}
