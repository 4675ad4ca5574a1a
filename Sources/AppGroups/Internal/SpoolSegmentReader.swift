import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Reads a segment file (`Protocol/container.md` §4.9) in bounded pieces: never more than
/// one chunk, or one record's frame when it is larger, at a time.
package enum SpoolSegmentReader {
  /// The window the scans that look at every byte (zeros, damage) read at a time.
  static let window = 64 << 10

  /// Opens a segment without blocking (a FIFO named `*.seg` would block an `open` for
  /// reading forever) and checks that it is a regular file.
  ///
  /// - Returns: The open file; `nil` when it is gone. Throws `wrongFileType` when it is not
  ///   a regular file, and the open's error otherwise (`EISDIR` for a directory opened to
  ///   write is reported as `wrongFileType` too).
  static func open(
    _ name: String, in segments: borrowing Directory, flags: CInt
  ) throws(ContainerError) -> FileDescriptor? {
    let file: FileDescriptor
    do {
      file = try segments.openFile(name, flags: flags | O_NONBLOCK)
    } catch  where error.code == .notFound {
      return nil
    } catch  where error.cause?.errno == EISDIR {
      throw notRegular(name, in: segments, what: "segment")
    }
    guard try file.status().st_mode & S_IFMT == S_IFREG else {
      throw notRegular(name, in: segments, what: "segment")
    }
    return file
  }

  private static func notRegular(
    _ name: String, in segments: borrowing Directory, what: String
  ) -> ContainerError {
    ContainerError(
      code: .wrongFileType, path: segments.childPath(name),
      message: "The \(what) '\(segments.childPath(name))' is not a regular file.")
  }

  /// The cursor of a segment, or its first record when it has none or an invalid one.
  ///
  /// - Throws: `wrongFileType` when `<segment>.pos` is not a regular file (a FIFO would
  ///   fail every read with `EAGAIN`, a directory with `EISDIR`), else the open's or read's
  ///   error.
  static func cursor(of segment: String, in segments: borrowing Directory)
    throws(ContainerError) -> SpoolCursor
  {
    let start = SpoolCursor(offset: Int64(SpoolSegmentFormat.headerSize), unflushed: 0)
    guard let file = try openCursor(of: segment, in: segments, flags: O_RDONLY) else {
      return start
    }
    return SpoolCursor(try file.read(count: SpoolCursor.size + 1, at: 0)) ?? start
  }

  /// Opens `<segment>.pos` without blocking and checks that it is a regular file.
  ///
  /// - Returns: The open file; `nil` when it does not exist (and `create` is `false`).
  /// - Throws: `wrongFileType` when it is not a regular file.
  static func openCursor(
    of segment: String, in segments: borrowing Directory, flags: CInt, create: Bool = false
  ) throws(ContainerError) -> FileDescriptor? {
    let name = Spool.positionName(of: segment)
    let file: FileDescriptor
    do {
      file = try segments.openFile(name, flags: flags | O_NONBLOCK, create: create)
    } catch  where error.code == .notFound {
      return nil
    } catch  where error.cause?.errno == EISDIR {
      throw notRegular(name, in: segments, what: "cursor")
    }
    guard try file.status().st_mode & S_IFMT == S_IFREG else {
      throw notRegular(name, in: segments, what: "cursor")
    }
    return file
  }

  /// Reads the valid records of `file` from `start` up to `size`, the way
  /// ``SpoolSegmentFormat/scan(_:from:)`` reads bytes: up to the zeros written ahead, the end
  /// of the file or an invalid record.
  ///
  /// Reads a small chunk first, doubles it while records fill it (up to 1 MiB), and reads a
  /// record larger than the chunk whole, at the length its frame header declares (at most
  /// 16 MiB + 8). A record cut short by the chunk is read again, never taken as invalid.
  ///
  /// - Parameter found: Called with each record, its offset counted from the file's start.
  /// - Returns: Where the valid records end, and what follows them.
  static func scan(
    _ file: borrowing FileDescriptor, from start: Int64, size: Int64,
    firstChunk: Int = 4 << 10, largestChunk: Int = 1 << 20,
    found: (SpoolSegmentFormat.Record) -> Void
  ) throws(ContainerError) -> (end: Int64, tail: SpoolSegmentFormat.Tail) {
    precondition(firstChunk >= SpoolSegmentFormat.frameHeaderSize)
    var end = start
    var tail = SpoolSegmentFormat.Tail.zeros
    // Small first: a drain woken for one share reads its record and a few zeros.
    var chunk = firstChunk
    while end < size {
      let available = size - end
      let count = Int(min(Int64(chunk), available))
      let bytes = try file.read(count: count, at: end)
      let scan = SpoolSegmentFormat.scan(bytes, from: 0)
      for var record in scan.records {
        record.offset += Int(end)
        found(record)
      }
      end += Int64(scan.end)
      tail = scan.tail
      // The file ends within this chunk: what the scan found is final.
      if bytes.count < count || Int64(count) == available { break }
      if case .invalid = scan.tail {
        // Cut short by the chunk rather than by the file: read its frame whole. Anything
        // else (a bad header, a damaged body that fits) is final.
        let rest = bytes[scan.end...]
        if rest.count < SpoolSegmentFormat.frameHeaderSize, scan.end > 0 { continue }
        guard let length = SpoolSegmentFormat.frameLength(rest), length > rest.count else {
          break
        }
        chunk = max(chunk, length)
        continue
      }
      // A whole zero frame header within the chunk ends the records; fewer than 8 zero
      // bytes at its end may be the start of a record.
      if scan.end + SpoolSegmentFormat.frameHeaderSize <= count { break }
      // Many records: read more at once.
      chunk = max(chunk, min(chunk * 2, largestChunk))
    }
    return (end, tail)
  }

  /// Whether the bytes of `file` from `start` up to `size` are all zeros.
  static func isZero(_ file: borrowing FileDescriptor, from start: Int64, to size: Int64)
    throws(ContainerError) -> Bool
  {
    var offset = start
    while offset < size {
      let bytes = try file.read(count: Int(min(Int64(window), size - offset)), at: offset)
      guard !bytes.isEmpty else { return true }
      guard bytes.allSatisfy({ $0 == 0 }) else { return false }
      offset += Int64(bytes.count)
    }
    return true
  }

  /// The records from `start`, counted by their frame headers alone (a quota figure), as
  /// ``SpoolSegmentFormat/countFrames(_:from:)`` counts bytes; reads the headers through a
  /// window, so a large record's body is skipped rather than read.
  static func countFrames(_ file: borrowing FileDescriptor, from start: Int64, size: Int64)
    throws(ContainerError) -> (records: Int, bodyBytes: Int64)
  {
    var records = 0
    var bodyBytes: Int64 = 0
    var offset = start
    var buffer: [UInt8] = []
    var bufferStart: Int64 = 0
    let header = Int64(SpoolSegmentFormat.frameHeaderSize)
    while offset + header <= size {
      if offset < bufferStart || offset + header > bufferStart + Int64(buffer.count) {
        buffer = try file.read(count: Int(min(Int64(window), size - offset)), at: offset)
        bufferStart = offset
      }
      let index = Int(offset - bufferStart)
      guard let length = SpoolSegmentFormat.frameLength(buffer[index...]),
        offset + Int64(length) <= size
      else { break }
      records += 1
      bodyBytes += Int64(length) - header
      offset += Int64(length)
    }
    return (records, bodyBytes)
  }

  /// The most bytes a search (``firstRecord(_:after:size:budget:read:)``) reads for
  /// candidate frames that its window does not hold, so a hostile file with a plausible
  /// frame at every offset costs a bounded read, not its size times 16 MiB.
  static let searchBudget: Int64 = 64 << 20

  /// The offset of the first valid record at or after `start`, trying every offset, as
  /// ``SpoolSegmentFormat/firstRecord(in:after:)`` does on bytes; reads a window at a time.
  ///
  /// A candidate whose frame header is valid is skipped when its frame would end past the
  /// end of the file or its entry file's header fails its own CRC-32 (read from the window,
  /// or its 44 bytes alone); else it is checked in the window when its frame fits there, and
  /// otherwise its frame is read, while `budget` lasts: past it the search ends as if
  /// nothing valid followed.
  ///
  /// - Parameter read: Incremented by the bytes read (the search's cost).
  static func firstRecord(
    _ file: borrowing FileDescriptor, after start: Int64, size: Int64,
    budget: Int64 = searchBudget, read: inout Int64
  ) throws(ContainerError) -> Int64? {
    let header = SpoolSegmentFormat.frameHeaderSize
    let heads = header + SpoolEntryFormat.headerSize
    var left = budget
    var offset = start
    while offset + Int64(header) <= size {
      let bytes = try file.read(
        count: Int(min(Int64(window + header - 1), size - offset)), at: offset)
      read += Int64(bytes.count)
      guard bytes.count >= header else { return nil }
      for index in 0...(bytes.count - header) {
        guard let length = SpoolSegmentFormat.frameLength(bytes[index...]) else { continue }
        let at = offset + Int64(index)
        guard at + Int64(length) <= size else { continue }
        let head =
          index + heads <= bytes.count
          ? Array(bytes[index..<index + heads]) : try file.read(count: heads, at: at)
        if index + heads > bytes.count { read += Int64(head.count) }
        guard SpoolSegmentFormat.entryHeaderIsValid(head[header...]) else { continue }
        if index + length <= bytes.count {
          if isRecord(Array(bytes[index..<index + length])) { return at }
          continue
        }
        left -= Int64(length)
        guard left >= 0 else { return nil }
        read += Int64(length)
        if isRecord(try file.read(count: length, at: at)) { return at }
      }
      offset += Int64(bytes.count - header + 1)
    }
    return nil
  }

  /// ``firstRecord(_:after:size:budget:read:)`` with the default budget.
  static func firstRecord(_ file: borrowing FileDescriptor, after start: Int64, size: Int64)
    throws(ContainerError) -> Int64?
  {
    var read: Int64 = 0
    return try firstRecord(file, after: start, size: size, read: &read)
  }

  /// What ``resumption(_:at:size:released:)`` decided.
  enum Resumption: Equatable {
    /// The bytes from where the records ended up to this offset are damage: resume here.
    case at(Int64)
    /// The record where the records ended reads valid now: the scan read it while its
    /// `pwrite` was still copying it. Read again from there; nothing is damaged.
    case again
  }

  /// Where the records resume after what ends them at `end`.
  ///
  /// As ``SpoolSegmentFormat/resumption(in:at:released:)`` finds it in bytes: right after a
  /// damaged body whose frame is valid when a valid record follows it, or (with `released`)
  /// at the first valid record behind `end`. Reads the frame header, the record after it,
  /// and for the search a window at a time.
  ///
  /// By the framing, the record where the records end is read again, whole, after the one
  /// behind it was found valid: a `pread` is not atomic against a `pwrite`, so the scan may
  /// have seen it torn while its producer's `pwrite` was still copying it. A valid record
  /// behind it means that `pwrite` returned (a producer appends one record at a time, in
  /// offset order), so what it reads now is what the file holds: only a record that is
  /// still invalid is damage (``Resumption/again`` otherwise).
  static func resumption(
    _ file: borrowing FileDescriptor, at end: Int64, size: Int64, released: Bool
  ) throws(ContainerError) -> Resumption? {
    guard end < size else { return nil }
    let header = Int64(SpoolSegmentFormat.frameHeaderSize)
    let bytes = try file.read(count: Int(min(header, size - end)), at: end)
    if let length = SpoolSegmentFormat.frameLength(bytes[...]), end + Int64(length) < size {
      let next = end + Int64(length)
      let after = try file.read(count: Int(min(header, size - next)), at: next)
      if let following = SpoolSegmentFormat.frameLength(after[...]),
        next + Int64(following) <= size,
        isRecord(try file.read(count: following, at: next))
      {
        return isRecord(try file.read(count: length, at: end)) ? .again : .at(next)
      }
    }
    return released ? try firstRecord(file, after: end + 1, size: size).map { .at($0) } : nil
  }

  /// Whether `frame` is exactly one valid record.
  private static func isRecord(_ frame: [UInt8]) -> Bool {
    SpoolSegmentFormat.scan(frame, from: 0).records.first?.length == frame.count
  }

  /// Reads the valid records of `file` from `start`, as ``scan(_:from:size:firstChunk:largestChunk:found:)``
  /// does, resuming past damage where ``resumption(_:at:size:released:)`` allows, as
  /// ``SpoolSegmentFormat/scanResuming(_:from:released:)`` does on bytes.
  ///
  /// - Parameters:
  ///   - found: Called with each record, its offset counted from the file's start.
  ///   - damaged: Called with each damaged range passed, and the reason the records
  ///     stopped at its start.
  ///   - stopped: Called with the offset where the records stop, before the reader decides
  ///     whether to resume (tests change the file there, as a producer's write would).
  /// - Returns: Where the valid records finally end, and what follows them.
  static func scanResuming(
    _ file: borrowing FileDescriptor, from start: Int64, size: Int64, released: Bool,
    firstChunk: Int = 4 << 10, largestChunk: Int = 1 << 20,
    found: (SpoolSegmentFormat.Record) -> Void,
    damaged: (Range<Int64>, _ reason: String) -> Void,
    stopped: (Int64) -> Void = { _ in }
  ) throws(ContainerError) -> (end: Int64, tail: SpoolSegmentFormat.Tail) {
    var result = try scan(
      file, from: start, size: size, firstChunk: firstChunk, largestChunk: largestChunk,
      found: found)
    // Zeros that end the records are no frame: only a search (`released`) looks past them,
    // so a drain of a segment a producer holds reads nothing more for them.
    while released || result.tail != .zeros {
      // Zeros up to the end of the file (the zeros written ahead): nothing to search for,
      // and one pass over them is far cheaper than trying a frame at every offset.
      if result.tail == .zeros, try isZero(file, from: result.end, to: size) { break }
      stopped(result.end)
      guard let decision = try resumption(file, at: result.end, size: size, released: released)
      else { break }
      let next: Int64
      switch decision {
      case .again:
        // Read again from the same offset: the record there is valid now, so the scan
        // moves on (it stops for good should it not, as only a file changed back can).
        let before = result.end
        result = try scan(
          file, from: before, size: size, firstChunk: firstChunk, largestChunk: largestChunk,
          found: found)
        if result.end == before { return result }
        continue
      case .at(let offset):
        next = offset
      }
      if case .invalid(let reason) = result.tail {
        damaged(result.end..<next, reason)
      } else {
        damaged(result.end..<next, "zeros end the records at offset \(result.end)")
      }
      result = try scan(
        file, from: next, size: size, firstChunk: firstChunk, largestChunk: largestChunk,
        found: found)
    }
    return result
  }

  /// What the reader finds in the segment file at `path`, read with the given chunk sizes:
  /// its records from offset 16 and where they end, what follows them, the frames counted
  /// from there, and the first valid record behind them; then, resuming past damage as a
  /// consumer does (`released`), every record and the damaged ranges passed (the fuzz
  /// harness compares these with what ``SpoolSegmentFormat`` finds in the same bytes).
  package static func read(
    path: String, firstChunk: Int, largestChunk: Int, released: Bool
  ) throws(ContainerError) -> (
    records: [SpoolSegmentFormat.Record], end: Int, tail: SpoolSegmentFormat.Tail,
    frames: (records: Int, bodyBytes: Int64), firstRecord: Int?,
    resumed: (records: [SpoolSegmentFormat.Record], damaged: [Range<Int>], end: Int)
  ) {
    let file = try FileDescriptor.openRegularFile(path)
    let size = Int64(try file.status().st_size)
    let start = min(Int64(SpoolSegmentFormat.headerSize), size)
    var records: [SpoolSegmentFormat.Record] = []
    let scan = try scan(
      file, from: start, size: size, firstChunk: firstChunk, largestChunk: largestChunk
    ) { records.append($0) }
    var all: [SpoolSegmentFormat.Record] = []
    var damaged: [Range<Int>] = []
    let resumed = try scanResuming(
      file, from: start, size: size, released: released, firstChunk: firstChunk,
      largestChunk: largestChunk, found: { all.append($0) },
      damaged: { range, _ in damaged.append(Int(range.lowerBound)..<Int(range.upperBound)) })
    return (
      records, Int(scan.end), scan.tail, try countFrames(file, from: start, size: size),
      try firstRecord(file, after: scan.end, size: size).map { Int($0) },
      (all, damaged, Int(resumed.end))
    )
  }
}
