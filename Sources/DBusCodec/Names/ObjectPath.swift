/// An object path such as `/org/notifybus/Notify1`.
///
/// Valid: `/`, `/org/notifybus/Notify1`, `/a_b/c9`. Invalid: the empty string, `org`
/// (no leading slash), `/org/` (trailing slash), `/org//x` (empty element), `/org/a-b`
/// (character not allowed).
public struct ObjectPath: ValidatedName {
  public let rawValue: String
  public init(unchecked string: String) { rawValue = string }
  public static var kind: String { "object path" }

  /// The root path, `/`.
  public static let root: ObjectPath = "/"

  public static func violation(in string: String) -> String? {
    let bytes = Array(string.utf8)
    guard bytes.first == UInt8(ascii: "/") else { return "must start with '/'" }
    if bytes.count == 1 { return nil }
    if bytes.last == UInt8(ascii: "/") { return "must not end with '/'" }
    var element = 0
    var previousWasSlash = true
    for byte in bytes.dropFirst() {
      if byte == UInt8(ascii: "/") {
        if previousWasSlash { return "element \(element + 1) is empty" }
        element += 1
        previousWasSlash = true
        continue
      }
      previousWasSlash = false
      guard NameGrammar.isLetterOrUnderscore(byte) || NameGrammar.isDigit(byte) else {
        return "character '\(NameGrammar.printable(byte))' is not allowed in element \(element + 1)"
      }
    }
    return nil
  }
}
