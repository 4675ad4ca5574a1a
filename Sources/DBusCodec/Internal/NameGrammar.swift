/// The character classes and element rules that the D-Bus specification uses for names.
package enum NameGrammar {
  /// The maximum length in bytes of a bus, interface, error or member name.
  package static let maximumNameLength = 255

  package static func isLetterOrUnderscore(_ byte: UInt8) -> Bool {
    (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
  }

  package static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

  /// Checks a dot-separated name whose elements use `[A-Za-z0-9_]` (plus `-` when
  /// `allowHyphen`), do not start with a digit unless `allowLeadingDigit`, and number at
  /// least `minimumElements`.
  ///
  /// - Returns: `nil` when valid, else the rule that was broken.
  package static func dottedNameViolation(
    _ bytes: some Collection<UInt8>,
    minimumElements: Int,
    allowHyphen: Bool,
    allowLeadingDigit: Bool
  ) -> String? {
    if bytes.isEmpty { return "must not be empty" }
    if bytes.count > maximumNameLength {
      return "is \(bytes.count) bytes long; the limit is \(maximumNameLength)"
    }
    var elements = 0
    var elementLength = 0
    for byte in bytes {
      if byte == UInt8(ascii: ".") {
        if elementLength == 0 { return "element \(elements + 1) is empty" }
        elements += 1
        elementLength = 0
        continue
      }
      let allowed =
        isLetterOrUnderscore(byte) || isDigit(byte) || (allowHyphen && byte == UInt8(ascii: "-"))
      if !allowed {
        return "character '\(printable(byte))' is not allowed in element \(elements + 1)"
      }
      if elementLength == 0 && isDigit(byte) && !allowLeadingDigit {
        return "element \(elements + 1) starts with a digit"
      }
      elementLength += 1
    }
    if elementLength == 0 { return "element \(elements + 1) is empty" }
    elements += 1
    if elements < minimumElements {
      return "needs at least \(minimumElements) elements separated by '.'"
    }
    return nil
  }

  package static func printable(_ byte: UInt8) -> String {
    byte >= 0x20 && byte < 0x7F
      ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16, uppercase: true)
  }
}
