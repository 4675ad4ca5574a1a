import AppGroups

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Feeds arbitrary bytes to the spool's segment parser (header, records, cursor).
///
/// Scanning must never crash or read out of bounds; the records it finds must lie inside
/// the input, back to back from the start, and re-frame to the same bytes; a cursor that
/// decodes must re-encode to the same bytes. The chunked reader of segment files, with
/// chunks small enough that records and zeros straddle them, must find what the parser finds
/// in the same bytes, and resume past damage (records after a bad one, after a hole of zeros)
/// where the parser does.
public func fuzz(_ bytes: [UInt8]) {
  fuzzParser(bytes)
  fuzzFileReader(bytes)
}

private func fuzzParser(_ bytes: [UInt8]) {
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
  // Resuming past damage: each resumption starts a valid record after where the records
  // stopped; held by a producer, only right after a frame whose header is valid.
  for released in [false, true] {
    let resumed = SpoolSegmentFormat.scanResuming(bytes, from: start, released: released)
    precondition(
      resumed.scan.records.starts(with: scan.records), "resuming changed the first records")
    var stopped = scan.end
    for range in resumed.damaged {
      precondition(range.lowerBound >= stopped && range.upperBound > range.lowerBound)
      precondition(
        SpoolSegmentFormat.scan(bytes, from: range.upperBound).records.first?.offset
          == range.upperBound, "the records resume at no valid record")
      if !released {
        precondition(
          SpoolSegmentFormat.frameLength(bytes[range.lowerBound...]).map {
            range.lowerBound + $0
          } == range.upperBound, "a held segment resumed other than by its framing")
      }
      stopped = range.upperBound
    }
    let ends = resumed.scan.records.map { $0.offset + $0.length }
    precondition(zip(ends, resumed.scan.records.dropFirst()).allSatisfy { $0 <= $1.offset })
    if released {
      precondition(
        SpoolSegmentFormat.firstRecord(in: bytes, after: resumed.scan.end + 1) == nil,
        "a valid record is left behind the end")
    }
  }
  if let cursor = SpoolCursor(Array(bytes.prefix(20))) {
    precondition(cursor.bytes == Array(bytes.prefix(20)), "cursor round trip changed the bytes")
  }
}

/// The file the chunked reader reads, rewritten for each input.
private let readerPath = "/tmp/notifybus-fuzz-segment-\(getpid())"

private func fuzzFileReader(_ bytes: [UInt8]) {
  let fd = open(readerPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
  precondition(fd >= 0, "cannot create \(readerPath)")
  let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
  close(fd)
  precondition(written == bytes.count, "cannot write \(readerPath)")
  let firstChunk = 8 + Int(bytes.last ?? 0) % 64
  // Held by a producer (resuming by the framing alone) or released (searching too).
  for released in [false, true] {
    fuzzFileReader(bytes, firstChunk: firstChunk, released: released)
  }
}

private func fuzzFileReader(_ bytes: [UInt8], firstChunk: Int, released: Bool) {
  let read:
    (
      records: [SpoolSegmentFormat.Record], end: Int, tail: SpoolSegmentFormat.Tail,
      frames: (records: Int, bodyBytes: Int64), firstRecord: Int?,
      resumed: (records: [SpoolSegmentFormat.Record], damaged: [Range<Int>], end: Int)
    )
  do {
    read = try SpoolSegmentReader.read(
      path: readerPath, firstChunk: firstChunk, largestChunk: firstChunk * 4, released: released)
  } catch {
    preconditionFailure("the reader failed on a regular file: \(error)")
  }
  let start = min(SpoolSegmentFormat.headerSize, bytes.count)
  let scan = SpoolSegmentFormat.scan(bytes, from: start)
  precondition(read.records == scan.records, "the chunked reader found other records")
  precondition(read.end == scan.end, "the chunked reader ends elsewhere")
  if scan.tail == .zeros { precondition(read.tail == .zeros, "the reader saw damage in zeros") }
  let counted = SpoolSegmentFormat.countFrames(bytes, from: start)
  precondition(
    read.frames.records == counted.records && read.frames.bodyBytes == Int64(counted.bodyBytes),
    "the windowed frame count differs")
  precondition(
    read.firstRecord == SpoolSegmentFormat.firstRecord(in: bytes, after: scan.end),
    "the windowed search found another record")
  let resumed = SpoolSegmentFormat.scanResuming(bytes, from: start, released: released)
  precondition(
    read.resumed.records == resumed.scan.records && read.resumed.damaged == resumed.damaged
      && read.resumed.end == resumed.scan.end,
    "the chunked reader resumed elsewhere past damage")
}
