import NotifyServerFiles

/// Feeds arbitrary bytes to notifyd's state file parser.
///
/// Parsing must never crash; a file that parses must serialize and parse back to the same
/// records, and its errors must name a line inside the input.
public func fuzz(_ bytes: [UInt8]) {
  do {
    let records = try StateFile.parse(bytes, path: "fuzz")
    let again = try StateFile.parse(StateFile.serialize(records), path: "again")
    precondition(Set(again) == Set(records) && again.count == records.count, "no round trip")
  } catch {
    let lines = bytes.count { $0 == UInt8(ascii: "\n") } + 1
    precondition(error.line >= 0 && error.line <= lines, "error line \(error.line) past the input")
  }
}
