/// Validation of the single path components that callers choose: suite, spool and dedupe
/// names, entry ids and attachment names.
enum SafeName {
  /// A portable name: 1 to `limit` bytes of ASCII letters, digits, `.`, `_` and `-`, not starting
  /// with `.`.
  ///
  /// Used for suite, spool and dedupe names and for entry ids.
  static func checkPortable(_ name: String, kind: String, limit: Int = 128)
    throws(ContainerError)
  {
    func invalid(_ why: String) -> ContainerError {
      ContainerError(
        code: .invalidName, path: "",
        message: "Invalid \(kind) '\(name)': \(why). Use 1 to \(limit) letters, digits, "
          + "'.', '_' or '-', not starting with '.'.")
    }
    guard !name.isEmpty else { throw invalid("it is empty") }
    guard name.utf8.count <= limit else { throw invalid("it is longer than \(limit) bytes") }
    guard name.utf8.first != UInt8(ascii: ".") else { throw invalid("it starts with '.'") }
    for byte in name.utf8 {
      switch byte {
      case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"),
        UInt8(ascii: "-"):
        continue
      default:
        throw invalid("it contains a character other than letters, digits, '.', '_' or '-'")
      }
    }
  }

  /// An attachment file name: 1 to 255 bytes of UTF-8 without `/` or NUL, not starting
  /// with `.`, and not the reserved name `entry`.
  static func checkAttachment(_ name: String) throws(ContainerError) {
    func invalid(_ why: String) -> ContainerError {
      ContainerError(
        code: .invalidName, path: "",
        message: "Invalid attachment name '\(name)': \(why).")
    }
    guard !name.isEmpty else { throw invalid("it is empty") }
    guard name.utf8.count <= 255 else { throw invalid("it is longer than 255 bytes") }
    guard name.utf8.first != UInt8(ascii: ".") else { throw invalid("it starts with '.'") }
    guard !name.utf8.contains(UInt8(ascii: "/")) else { throw invalid("it contains '/'") }
    guard !name.utf8.contains(0) else { throw invalid("it contains a NUL byte") }
    guard name != SpoolEntryFormat.entryFileName else {
      throw invalid("'\(SpoolEntryFormat.entryFileName)' is reserved for the entry file")
    }
  }
}
