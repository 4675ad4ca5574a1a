/// The text format of `notifyd`'s state file (`Protocol/notifyd.md`, "State file").
///
/// ```
/// notifyd-state 2
/// group.example.count 42 1764428400000000000
/// odd%20name 7 1764428400000000001
/// checksum 3c1e5e2b4f0a9d17
/// ```
///
/// The first line is the header. Every other line but the last is a name (bytes up to
/// 0x20, `%` and 0x7F written as `%XX`), its state and its set time in nanoseconds since
/// the epoch, separated by one space, ending with a newline. The last line is `checksum`
/// and the FNV-1a 64-bit hash of every byte before it, in 16 lower-case hex digits: any
/// changed byte is detected. Lines starting with `#` and empty lines are ignored.
/// Version 1 files (header `notifyd-state 1`, no checksum line) are still read.
public enum StateFile {
  /// The first line notifyd writes.
  public static let header = "notifyd-state 2"
  /// The first line of version 1 files, which have no checksum.
  public static let version1Header = "notifyd-state 1"
  /// The most records a file may hold unless the reader is told otherwise: notifyd's
  /// default `--max-names`.
  public static let maximumRecords = 100_000
  /// The longest name in bytes, as in `Protocol/notify.md`.
  public static let maximumNameLength = 511

  /// The longest record line, newline included: a name of ``maximumNameLength`` bytes all
  /// escaped (`%XX`), two 20-digit numbers and their separators.
  public static let maximumRecordLength = maximumNameLength * 3 + 1 + 20 + 1 + 20 + 1

  /// The largest file that ``serialize(_:)`` writes for `records` records: the reader's
  /// size limit, so notifyd can always read back what it wrote.
  public static func maximumSize(records: Int) -> Int {
    let fixed = header.utf8.count + 1 + checksumLineLength
    let (body, overflow) = records.multipliedReportingOverflow(by: maximumRecordLength)
    let (total, overflowAgain) = body.addingReportingOverflow(fixed)
    return overflow || overflowAgain ? .max : total
  }

  /// `checksum ` and 16 hex digits and a newline.
  static let checksumLineLength = 9 + 16 + 1

  /// Reads a state file's bytes.
  ///
  /// - Parameters:
  ///   - bytes: The whole file.
  ///   - path: The file's path, for error messages.
  ///   - maximumRecords: The most records accepted.
  /// - Returns: The records, in file order.
  /// - Throws: ``NotifydFileError`` naming the file, the line and the problem.
  public static func parse(
    _ bytes: [UInt8], path: String, maximumRecords: Int = StateFile.maximumRecords
  ) throws(NotifydFileError) -> [StateRecord] {
    var lines = try TextLines.split(bytes, path: path, requireFinalNewline: true)
    guard let first = lines.first,
      first.bytes.elementsEqual(header.utf8) || first.bytes.elementsEqual(version1Header.utf8)
    else {
      throw NotifydFileError(
        .badHeader, path: path, line: 1,
        "the first line is not '\(header)' (or version 1's '\(version1Header)')")
    }
    if first.bytes.elementsEqual(header.utf8) {
      try verifyChecksum(&lines, bytes: bytes, path: path)
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
          .tooLarge, path: path, line: line.number,
          "more than \(maximumRecords) names (notifyd's --max-names)")
      }
      seen[name] = line.number
      records.append(StateRecord(name: name, state: state, setTimeNanoseconds: time))
    }
    return records
  }

  /// Checks and removes the last line, `checksum <16 hex digits>`.
  private static func verifyChecksum(
    _ lines: inout [TextLines.Line], bytes: [UInt8], path: String
  ) throws(NotifydFileError) {
    guard lines.count >= 2, let last = lines.last else {
      throw NotifydFileError(
        .badChecksum, path: path, line: lines.count,
        "the checksum line is missing (truncated file?)")
    }
    let fields = last.bytes.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
    guard fields.count == 2, fields[0].elementsEqual("checksum".utf8), fields[1].count == 16,
      let stored = fields[1].reduce(
        UInt64?(0),
        { value, byte in
          TextLines.hexValue(byte).flatMap { digit in value.map { $0 << 4 | UInt64(digit) } }
        })
    else {
      throw NotifydFileError(
        .badChecksum, path: path, line: last.number,
        "the last line is not 'checksum' and 16 hex digits (truncated file?)")
    }
    let computed = checksum(bytes[..<last.bytes.startIndex])
    guard computed == stored else {
      throw NotifydFileError(
        .badChecksum, path: path, line: last.number,
        "the checksum does not match the contents (stored \(hex(stored)), computed "
          + "\(hex(computed))): a byte changed since notifyd wrote it")
    }
    lines.removeLast()
  }

  /// FNV-1a, 64 bits: every single changed byte changes the result.
  package static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
    return hash
  }

  /// 16 lower-case hex digits.
  package static func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
  }

  /// Writes records in the state file format, sorted by name's bytes, with the checksum
  /// line last.
  public static func serialize(_ records: [StateRecord]) -> [UInt8] {
    var output = Array(header.utf8)
    output.append(UInt8(ascii: "\n"))
    let sorted = records.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    for record in sorted {
      output += escape(record.name).utf8
      output += " \(record.state) \(record.setTimeNanoseconds)\n".utf8
    }
    output += "checksum \(hex(checksum(output[...])))\n".utf8
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
