/// A spool segment (`segments/<name>.seg`): a header, records back to back, then zeros that
/// the producer wrote ahead; and the consumer's read position in it (`<name>.pos`).
///
/// Documented byte for byte in `Protocol/container.md` §4.9.
///
/// ```
/// segment header (16 bytes)
///  0  4  magic "NBSG"
///  4  2  version, 1
///  6  2  reserved, 0
///  8  4  reserved, 0
/// 12  4  CRC-32 of bytes 0..<12
/// record (8 + N bytes), repeated
///  0  4  body length N (40...maximumRecordLength)
///  4  4  CRC-32 of the 4 bytes of N
///  8  N  body: an entry file (§4.3) without attachments
/// ```
/// A length of zero ends the records (the zeros written ahead). All integers are
/// little-endian.
package enum SpoolSegmentFormat {
  static let magic: [UInt8] = Array("NBSG".utf8)
  static let version: UInt16 = 1
  package static let headerSize = 16
  static let frameHeaderSize = 8
  /// The largest record body a reader accepts.
  static let maximumRecordLength = 16 << 20
  /// The largest entry file a producer puts in a segment; larger ones stay files (§4.4).
  static let maximumSegmentEntry = 256 << 10

  /// The segment header.
  package static func header() -> [UInt8] {
    var writer = ByteWriter()
    writer.append(contentsOf: magic)
    writer.append(version)
    writer.append(UInt16(0))
    writer.append(UInt32(0))
    writer.append(CRC32.checksum(writer.bytes))
    return writer.bytes
  }

  /// Why a segment header is not valid, or `nil` when it is.
  package static func headerProblem(_ bytes: [UInt8]) -> String? {
    guard bytes.count >= headerSize else {
      return "it is \(bytes.count) bytes, shorter than a segment header"
    }
    guard bytes[0..<4].elementsEqual(magic) else { return "the magic is not 'NBSG'" }
    var reader = ByteReader(bytes, at: 4)
    let version = reader.read(UInt16.self)!
    let reserved = (reader.read(UInt16.self)!, reader.read(UInt32.self)!)
    let checksum = reader.read(UInt32.self)!
    guard checksum == CRC32.checksum(bytes[0..<12]) else {
      return "the header checksum does not match"
    }
    guard version == Self.version else {
      return "segment version \(version) is not supported (expected \(Self.version))"
    }
    guard reserved == (0, 0) else { return "reserved header fields are not zero" }
    return nil
  }

  /// A record: the frame around an entry file.
  package static func frame(_ entry: [UInt8]) -> [UInt8] {
    var writer = ByteWriter()
    writer.bytes.reserveCapacity(frameHeaderSize + entry.count)
    writer.append(UInt32(entry.count))
    writer.append(CRC32.checksum(writer.bytes))
    writer.append(contentsOf: entry)
    return writer.bytes
  }

  /// One valid record found by ``scan(_:from:)``.
  package struct Record: Hashable, Sendable {
    /// Where the frame starts, in the scanned bytes.
    package var offset: Int
    /// The frame's length, header included.
    package var length: Int
    package var enqueueTime: Int64
    package var id: String
  }

  /// What follows the last valid record.
  package enum Tail: Hashable, Sendable {
    /// Nothing, or only zeros: the records written ahead of need.
    case zeros
    /// Bytes that are not a valid record: a write in progress or cut short, or damage.
    case invalid(reason: String)
  }

  /// The valid records of `bytes` from `start`, in order, up to the first that is not.
  package struct Scan: Sendable {
    package var records: [Record] = []
    /// Where the valid records end.
    package var end: Int
    package var tail: Tail = .zeros
  }

  /// Reads records from `start` until the bytes end, a zero length (the zeros written
  /// ahead) or an invalid record: cut short, a length out of range, a failed checksum, or
  /// a body that is not a valid entry file without attachments.
  ///
  /// Never reads out of bounds and never allocates more than one record's body.
  package static func scan(_ bytes: [UInt8], from start: Int) -> Scan {
    var scan = Scan(end: min(max(start, 0), bytes.count))
    var reader = ByteReader(bytes, at: scan.end)
    while reader.remaining > 0 {
      let offset = reader.readerIndex
      guard let length = reader.read(UInt32.self), let checksum = reader.read(UInt32.self)
      else {
        if !bytes[offset...].allSatisfy({ $0 == 0 }) {
          scan.tail = .invalid(reason: "a record header is cut short at offset \(offset)")
        }
        return scan
      }
      if length == 0 && checksum == 0 {
        if !bytes[offset...].allSatisfy({ $0 == 0 }) {
          scan.tail = .invalid(reason: "non-zero bytes follow the end of the records")
        }
        return scan
      }
      guard withUnsafeBytes(of: length.littleEndian, { CRC32.checksum($0) }) == checksum,
        (SpoolEntryFormat.headerSize + 4...maximumRecordLength).contains(Int(length))
      else {
        scan.tail = .invalid(reason: "the record header at offset \(offset) is not valid")
        return scan
      }
      guard let body = reader.readBytes(Int(length)) else {
        scan.tail = .invalid(reason: "the record at offset \(offset) is cut short")
        return scan
      }
      let decoded: SpoolEntryFormat.Decoded
      do {
        decoded = try SpoolEntryFormat.decode(Array(body))
      } catch {
        scan.tail = .invalid(reason: "the record at offset \(offset) is damaged (\(error.reason))")
        return scan
      }
      guard decoded.attachments.isEmpty else {
        scan.tail = .invalid(reason: "the record at offset \(offset) lists attachments")
        return scan
      }
      scan.records.append(
        Record(
          offset: offset, length: frameHeaderSize + Int(length),
          enqueueTime: decoded.enqueueTime, id: decoded.id))
      scan.end = reader.readerIndex
    }
    return scan
  }

  /// The length of the frame whose header starts `bytes` (header included), or `nil` when
  /// fewer than 8 bytes are given, the length's CRC-32 fails or the length is out of range.
  package static func frameLength(_ bytes: ArraySlice<UInt8>) -> Int? {
    guard bytes.count >= frameHeaderSize else { return nil }
    let start = bytes.startIndex
    func word(_ at: Int) -> UInt32 {
      (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[start + at + $1]) << (8 * $1) }
    }
    let length = word(0)
    // The range first: cheaper than the checksum, and it refuses zeros (a search for the
    // next record crosses many).
    guard (SpoolEntryFormat.headerSize + 4...maximumRecordLength).contains(Int(length)),
      withUnsafeBytes(of: length.littleEndian, { CRC32.checksum($0) }) == word(4)
    else { return nil }
    return frameHeaderSize + Int(length)
  }

  /// Whether `bytes` start with an entry file header (§4.3) whose CRC-32 matches: a cheap
  /// test of a record's body before reading the rest of it.
  static func entryHeaderIsValid(_ bytes: ArraySlice<UInt8>) -> Bool {
    let start = bytes.startIndex
    guard bytes.count >= SpoolEntryFormat.headerSize else { return false }
    let stored = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[start + 32 + $1]) << (8 * $1) }
    return stored == CRC32.checksum(bytes[start..<start + 32])
  }

  /// Where the records resume after bytes that end them at `end` (an invalid record, or
  /// zeros with bytes behind them), or `nil` when they do not (`Protocol/container.md`
  /// §4.9, "Resynchronising").
  ///
  /// - By the framing: the frame header at `end` is valid and a valid record starts right
  ///   after the frame it declares: that record's body is damaged (a producer writes
  ///   records in order, so one behind it means it was written whole). Holds while a
  ///   producer still appends.
  /// - With `released` (no producer holds the segment: nothing is being written), the
  ///   first valid record after `end` found by trying every offset (``firstRecord(in:after:)``).
  package static func resumption(in bytes: [UInt8], at end: Int, released: Bool) -> Int? {
    guard end >= 0, end < bytes.count else { return nil }
    if let length = frameLength(bytes[end...]), end + length < bytes.count,
      let next = scan(bytes, from: end + length).records.first, next.offset == end + length
    {
      return end + length
    }
    return released ? firstRecord(in: bytes, after: end + 1) : nil
  }

  /// The valid records of `bytes` from `start`, resuming past damage where
  /// ``resumption(in:at:released:)`` allows: the records, the damaged ranges passed (each
  /// from where the records stopped to where they resumed), and where and how the records
  /// finally end.
  package static func scanResuming(_ bytes: [UInt8], from start: Int, released: Bool) -> (
    scan: Scan, damaged: [Range<Int>]
  ) {
    var result = scan(bytes, from: start)
    var damaged: [Range<Int>] = []
    while let next = resumption(in: bytes, at: result.end, released: released) {
      damaged.append(result.end..<next)
      let more = scan(bytes, from: next)
      result.records += more.records
      result.end = more.end
      result.tail = more.tail
    }
    return (result, damaged)
  }

  /// The records from `start`, counted by their frame headers alone.
  ///
  /// Bodies are not checked: a cheap count for quotas. Stops where ``scan(_:from:)`` would
  /// at the latest.
  package static func countFrames(_ bytes: [UInt8], from start: Int) -> (
    records: Int, bodyBytes: Int
  ) {
    var reader = ByteReader(bytes, at: min(max(start, 0), bytes.count))
    var records = 0
    var bodyBytes = 0
    while let length = reader.read(UInt32.self), let checksum = reader.read(UInt32.self),
      withUnsafeBytes(of: length.littleEndian, { CRC32.checksum($0) }) == checksum,
      (SpoolEntryFormat.headerSize + 4...maximumRecordLength).contains(Int(length)),
      reader.readBytes(Int(length)) != nil
    {
      records += 1
      bodyBytes += Int(length)
    }
    return (records, bodyBytes)
  }

  /// The offset of the first valid record at or after `start`, trying every offset: tells
  /// damage with records behind it from a torn tail.
  package static func firstRecord(in bytes: [UInt8], after start: Int) -> Int? {
    var offset = max(start, 0)
    while offset + frameHeaderSize <= bytes.count {
      if frameLength(bytes[offset...]) != nil, !scan(bytes, from: offset).records.isEmpty {
        return offset
      }
      offset += 1
    }
    return nil
  }

  /// The entry file of the record at the start of `frame` (see ``scan(_:from:)``).
  static func decodeRecord(_ frame: [UInt8]) throws(SpoolEntryFormat.Failure)
    -> SpoolEntryFormat.Decoded
  {
    let scan = scan(frame, from: 0)
    guard let record = scan.records.first, record.length == frame.count else {
      if case .invalid(let reason) = scan.tail { throw .init(reason) }
      throw .init("the record is missing")
    }
    return try SpoolEntryFormat.decode(Array(frame[frameHeaderSize...]))
  }
}

/// The consumer's position in a segment (`<name>.pos`, 20 bytes).
///
/// ```
///  0  4  magic "NBSC"
///  4  8  offset: every record before it was delivered (or dropped as a duplicate)
/// 12  4  records passed since this file was last flushed
/// 16  4  CRC-32 of bytes 0..<16
/// ```
package struct SpoolCursor: Hashable, Sendable {
  static let magic: [UInt8] = Array("NBSC".utf8)
  static let size = 20
  package var offset: Int64
  package var unflushed: UInt32

  package init(offset: Int64, unflushed: UInt32) {
    self.offset = offset
    self.unflushed = unflushed
  }

  package var bytes: [UInt8] {
    var writer = ByteWriter()
    writer.append(contentsOf: Self.magic)
    writer.append(offset)
    writer.append(unflushed)
    writer.append(CRC32.checksum(writer.bytes))
    return writer.bytes
  }

  /// Decodes a cursor file; `nil` when it is not a valid one.
  package init?(_ bytes: [UInt8]) {
    guard bytes.count == Self.size, bytes[0..<4].elementsEqual(Self.magic) else { return nil }
    var reader = ByteReader(bytes, at: 4)
    let offset = reader.read(Int64.self)!
    let unflushed = reader.read(UInt32.self)!
    guard reader.read(UInt32.self)! == CRC32.checksum(bytes[0..<16]),
      offset >= Int64(SpoolSegmentFormat.headerSize)
    else { return nil }
    self.init(offset: offset, unflushed: unflushed)
  }
}
