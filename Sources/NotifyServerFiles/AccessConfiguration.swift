/// The access configuration file of `notifyd` (`--config PATH`, `Protocol/notifyd.md`).
///
/// ```
/// # Only root writes com.example.system. names; everyone reads them.
/// reserve com.example.system. 0 0 rwr-r-
/// reserve com.example.system.clock 0 266 rwrwr-
/// ```
///
/// One directive per line, fields separated by spaces or tabs. A line whose first
/// non-blank character is `#` is a comment; blank lines are ignored. The only directive
/// is `reserve PREFIX UID GID MODE`; a prefix may be reserved once.
public enum AccessConfiguration {
  /// The most rules a file may hold.
  public static let maximumRules = 10_000
  /// The largest file accepted, in bytes.
  public static let maximumSize = 1 << 20

  /// Reads a configuration file's bytes.
  ///
  /// - Parameters:
  ///   - bytes: The whole file.
  ///   - path: The file's path, for messages and for each rule's ``AccessRule/origin``.
  /// - Returns: The rules, in file order.
  /// - Throws: ``NotifydFileError`` naming the file, the line and the problem.
  public static func parse(_ bytes: [UInt8], path: String) throws(NotifydFileError)
    -> [AccessRule]
  {
    guard bytes.count <= maximumSize else {
      throw NotifydFileError(
        .tooLarge, path: path, line: 0, "the file is larger than \(maximumSize) bytes")
    }
    var rules: [AccessRule] = []
    var seen: [String: Int] = [:]
    for line in try TextLines.split(bytes, path: path, requireFinalNewline: false) {
      var content = line.bytes
      if content.last == UInt8(ascii: "\r") { content = content.dropLast() }
      let fields = content.split(whereSeparator: TextLines.isBlank)
      guard let directive = fields.first, directive.first != UInt8(ascii: "#") else { continue }
      // `bridge` and `bridge-…` lines configure the MQTT bridge, read by NotifyBridge.
      if directive.elementsEqual("bridge".utf8) || directive.starts(with: "bridge-".utf8) {
        continue
      }
      guard directive.elementsEqual("reserve".utf8) else {
        let word = String(decoding: directive, as: UTF8.self)
        throw NotifydFileError(
          .badLine, path: path, line: line.number,
          "unknown directive '\(word)'; the only one is 'reserve PREFIX UID GID MODE'")
      }
      guard fields.count == 5 else {
        throw NotifydFileError(
          .badLine, path: path, line: line.number,
          "'reserve' takes 4 fields (PREFIX UID GID MODE), not \(fields.count - 1)")
      }
      let prefix = try TextLines.checkName(
        Array(fields[1]), path: path, line: line.number, what: "prefix")
      guard let owner = TextLines.decimal(fields[2]).flatMap(UInt32.init(exactly:)) else {
        throw NotifydFileError(
          .badNumber, path: path, line: line.number,
          "UID '\(String(decoding: fields[2], as: UTF8.self))' is not a number from 0 to 4294967295"
        )
      }
      guard let group = TextLines.decimal(fields[3]).flatMap(UInt32.init(exactly:)) else {
        throw NotifydFileError(
          .badNumber, path: path, line: line.number,
          "GID '\(String(decoding: fields[3], as: UTF8.self))' is not a number from 0 to 4294967295"
        )
      }
      guard let mode = AccessMode(parsing: fields[4]) else {
        throw NotifydFileError(
          .badMode, path: path, line: line.number,
          "MODE '\(String(decoding: fields[4], as: UTF8.self))' is not six characters like rwr-r-")
      }
      if let earlier = seen[prefix] {
        throw NotifydFileError(
          .duplicate, path: path, line: line.number,
          "prefix '\(prefix)' is already reserved on line \(earlier)")
      }
      guard rules.count < maximumRules else {
        throw NotifydFileError(
          .tooLarge, path: path, line: line.number, "more than \(maximumRules) rules")
      }
      seen[prefix] = line.number
      rules.append(
        AccessRule(
          prefix: prefix, owner: owner, group: group, mode: mode, path: path, line: line.number))
    }
    return rules
  }
}
