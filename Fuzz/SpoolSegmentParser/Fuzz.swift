import AppGroups

/// Feeds arbitrary bytes to the spool's segment parser (header, records, cursor).
///
/// Scanning must never crash or read out of bounds; the records it finds must lie inside
/// the input, back to back from the start, and re-frame to the same bytes; a cursor that
/// decodes must re-encode to the same bytes.
public func fuzz(_ bytes: [UInt8]) {
  _ = SpoolSegmentFormat.headerProblem(bytes)
  let start = bytes.count >= SpoolSegmentFormat.headerSize ? SpoolSegmentFormat.headerSize : 0
  let scan = SpoolSegmentFormat.scan(bytes, from: start)
  var next = start
  for record in scan.records {
    precondition(record.offset == next, "records are not back to back")
    precondition(record.offset + record.length <= bytes.count, "a record runs past the input")
    let frame = Array(bytes[record.offset..<record.offset + record.length])
    let body = Array(frame[8...])
    precondition(SpoolSegmentFormat.frame(body) == frame, "re-framing changed the bytes")
    next = record.offset + record.length
  }
  precondition(scan.end == next, "the scan's end is not where its records end")
  let counted = SpoolSegmentFormat.countFrames(bytes, from: start)
  precondition(counted.records >= scan.records.count, "the frame count missed valid records")
  if scan.tail == .zeros {
    precondition(bytes[scan.end...].allSatisfy { $0 == 0 }, "a zero tail holds non-zero bytes")
  }
  if let found = SpoolSegmentFormat.firstRecord(in: bytes, after: scan.end) {
    precondition(found >= scan.end, "a record was found before where the search began")
    precondition(!SpoolSegmentFormat.scan(bytes, from: found).records.isEmpty)
  }
  if let cursor = SpoolCursor(Array(bytes.prefix(20))) {
    precondition(cursor.bytes == Array(bytes.prefix(20)), "cursor round trip changed the bytes")
  }
}
