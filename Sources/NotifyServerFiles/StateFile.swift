/// The text format of `notifyd`'s state file (`Protocol/notifyd.md`, "State file").
///
/// ```
/// notifyd-state 1
/// group.example.count 42 1764428400000000000
/// odd%20name 7 1764428400000000001
/// ```
///
/// The first line is the header. Every other line is a name (bytes up to 0x20, `%` and
/// 0x7F written as `%XX`), its state and its set time in nanoseconds since the epoch,
/// separated by one space, ending with a newline. Lines starting with `#` and empty lines
/// are ignored.
public enum StateFile {
  /// The first line.
  public static let header = "notifyd-state 1"
  /// The most records a file may hold.
  public static let maximumRecords = 100_000
  /// The longest name in bytes, as in `Protocol/notify.md`.
  public static let maximumNameLength = 511

  /// Reads a state file's bytes.
  ///
  /// - Parameters:
  ///   - bytes: The whole file.
  ///   - path: The file's path, for error messages.
  /// - Returns: The records, in file order.
  /// - Throws: ``NotifydFileError`` naming the file, the line and the problem.
  public static func parse(_ bytes: [UInt8], path: String) throws(NotifydFileError)
    -> [StateRecord]
  {
    let lines = try TextLines.split(bytes, path: path, requireFinalNewline: true)
    guard let first = lines.first, first.bytes.elementsEqual(header.utf8) else {
      throw NotifydFileError(
        .badHeader, path: path, line: 1, "the first line is not '\(header)'")
    }
    var records: [StateRecord] = []
    var seen: [String: Int] = [:]
    for line in lines.dropFirst() {
      if line.bytes.isEmpty || line.bytes.first == UInt8(ascii: "#") { continue }
      let fields = line.bytes.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
      guard fields.count == 3, !fields.contains(where: \.isEmpty) else {
        throw NotifydFileError(
          .badLine, path: path, line: line.number,
          "expected 'NAME STATE SET-TIME' separated by single spaces")
      }
      let name = try unescape(Array(fields[0]), path: path, line: line.number)
      guard let state = TextLines.decimal(fields[1]) else {
        throw NotifydFileError(
          .badNumber, path: path, line: line.number, "the state is not a 64-bit unsigned number")
      }
      guard let time = TextLines.decimal(fields[2]) else {
        throw NotifydFileError(
          .badNumber, path: path, line: line.number,
          "the set time is not a 64-bit unsigned number")
      }
      if let earlier = seen[name] {
        throw NotifydFileError(
          .duplicate, path: path, line: line.number, "'\(name)' already appears on line \(earlier)")
      }
      guard records.count < maximumRecords else {
        throw NotifydFileError(
          .tooLarge, path: path, line: line.number, "more than \(maximumRecords) names")
      }
      seen[name] = line.number
      records.append(StateRecord(name: name, state: state, setTimeNanoseconds: time))
    }
    return records
  }

  /// Writes records in the state file format, sorted by name's bytes.
  public static func serialize(_ records: [StateRecord]) -> [UInt8] {
    var output = Array(header.utf8)
    output.append(UInt8(ascii: "\n"))
    let sorted = records.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    for record in sorted {
      output += escape(record.name).utf8
      output += " \(record.state) \(record.setTimeNanoseconds)\n".utf8
    }
    return output
  }

  /// A name with bytes up to 0x20, `%` and 0x7F written as `%XX` (upper-case hex).
  public static func escape(_ name: String) -> String {
    var output: [UInt8] = []
    let digits = Array("0123456789ABCDEF".utf8)
    for byte in name.utf8 {
      if byte <= 0x20 || byte == UInt8(ascii: "%") || byte == 0x7F {
        output += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
      } else {
        output.append(byte)
      }
    }
    return String(decoding: output, as: UTF8.self)
  }

  /// Decodes an escaped name and checks it is a valid notification name.
  static func unescape(_ field: [UInt8], path: String, line: Int) throws(NotifydFileError)
    -> String
  {
    var bytes: [UInt8] = []
    var index = 0
    while index < field.count {
      let byte = field[index]
      if byte == UInt8(ascii: "%") {
        guard index + 2 < field.count,
          let high = TextLines.hexValue(field[index + 1]),
          let low = TextLines.hexValue(field[index + 2])
        else {
          throw NotifydFileError(
            .badName, path: path, line: line, "'%' at byte \(index + 1) of the name is not '%XX'")
        }
        bytes.append(high << 4 | low)
        index += 3
      } else {
        bytes.append(byte)
        index += 1
      }
    }
    return try TextLines.checkName(bytes, path: path, line: line)
  }
}
