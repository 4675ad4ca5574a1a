/// Line splitting and field checks shared by the state file and the access configuration.
enum TextLines {
  /// One line without its newline, with its 1-based number.
  struct Line {
    var number: Int
    var bytes: ArraySlice<UInt8>
  }

  /// The longest line accepted, in bytes.
  static let maximumLineLength = 4096

  /// Splits on `\n`.
  ///
  /// - Throws: ``NotifydFileError`` for a line over ``maximumLineLength`` bytes, or a
  ///   last line without a newline when `requireFinalNewline` is set.
  static func split(_ bytes: [UInt8], path: String, requireFinalNewline: Bool)
    throws(NotifydFileError) -> [Line]
  {
    var lines: [Line] = []
    var start = 0
    var number = 1
    while start < bytes.count {
      let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n"))
      if end == nil && requireFinalNewline {
        throw NotifydFileError(
          .badLine, path: path, line: number, "the last line has no newline (truncated file?)")
      }
      let stop = end ?? bytes.count
      guard stop - start <= maximumLineLength else {
        throw NotifydFileError(
          .tooLarge, path: path, line: number, "the line is longer than \(maximumLineLength) bytes")
      }
      lines.append(Line(number: number, bytes: bytes[start..<stop]))
      start = stop + 1
      number += 1
    }
    return lines
  }

  /// A decimal unsigned 64-bit number: digits only.
  static func decimal(_ field: some Collection<UInt8>) -> UInt64? {
    guard !field.isEmpty else { return nil }
    var value: UInt64 = 0
    for byte in field {
      guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
      let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
      let (sum, overflow2) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
      guard !overflow1, !overflow2 else { return nil }
      value = sum
    }
    return value
  }

  /// The value of a hex digit of either case.
  static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
  }

  /// Checks that bytes form a notification name (1 to 511 bytes of UTF-8, no NUL).
  static func checkName(_ bytes: [UInt8], path: String, line: Int, what: String = "name")
    throws(NotifydFileError) -> String
  {
    guard !bytes.isEmpty, bytes.count <= StateFile.maximumNameLength else {
      throw NotifydFileError(
        .badName, path: path, line: line,
        "the \(what) is \(bytes.count) bytes long; it must be 1 to \(StateFile.maximumNameLength)")
    }
    guard !bytes.contains(0) else {
      throw NotifydFileError(.badName, path: path, line: line, "the \(what) contains a NUL byte")
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
      throw NotifydFileError(.badName, path: path, line: line, "the \(what) is not valid UTF-8")
    }
    return text
  }

  /// Whether the byte is a space or a tab.
  static func isBlank(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
  }
}
