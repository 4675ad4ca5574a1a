public import DBusCodec

/// A method or signal name such as `Posted`.
///
/// Valid: `Posted`, `get_state`, `_x1`. Invalid: the empty string, `1st` (starts with a
/// digit), `a.b` (dot), `a-b` (hyphen), names over 255 bytes.
public struct MemberName: ValidatedName {
  public let rawValue: String
  public init(unchecked string: String) { rawValue = string }
  public static var kind: String { "member name" }

  public static func violation(in string: String) -> String? {
    let bytes = string.utf8
    if bytes.contains(UInt8(ascii: ".")) { return "must not contain '.'" }
    return NameGrammar.dottedNameViolation(
      bytes, minimumElements: 1, allowHyphen: false, allowLeadingDigit: false)
  }
}
