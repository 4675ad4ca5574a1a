/// Feeds arbitrary bytes to notifyd's state file parser (versions 1 and 2, with its
/// checksum).
///
/// Parsing must never crash; a file that parses must serialize and parse back to the same
/// records, the serialized file with any one bit changed must be refused, and errors must
/// name a line inside the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = Array(UnsafeBufferPointer(start: data, count: size))
  do {
    let records = try StateFile.parse(bytes, path: "fuzz")
    var written = StateFile.serialize(records)
    let again = try StateFile.parse(written, path: "again")
    precondition(Set(again) == Set(records) && again.count == records.count, "no round trip")
    written[size % written.count] ^= 0x01
    precondition((try? StateFile.parse(written, path: "flipped")) == nil, "a flipped bit loaded")
  } catch {
    let lines = bytes.count { $0 == UInt8(ascii: "\n") } + 1
    precondition(error.line >= 0 && error.line <= lines, "error line \(error.line) past the input")
  }
  return 0
}
