import Foundation
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

extension Spool {
  /// Durably adds an entry to the spool.
  ///
  /// When this returns, the entry is on stable storage and any consumer can claim it. An
  /// entry without attachments (at most 256 KiB encoded) is a record appended to this
  /// instance's segment with one `pwrite` and flushed with one `fdatasync`; threads that
  /// enqueue at the same time share it (group commit). Other entries are files: every file
  /// is flushed (`fdatasync`, and `fsync` of the entry directory when there are
  /// attachments), renamed into `new/`, and `new/` flushed, shared the same way. When it
  /// throws, nothing is visible to consumers, except a record whose flush failed, which a
  /// consumer may still find and deliver (retry with the same id: it is handed over once).
  ///
  /// The quotas are checked against a listing of `new/`, `cur/` and the segments at most
  /// 100 ms old plus this process's own enqueues since, so producers enqueueing at the same
  /// moment can overshoot a limit by what they add within that window. The next listing is
  /// taken after the flush, once the one in use is 50 ms old, so that enqueues following
  /// each other list nothing before their entry is readable.
  ///
  /// - Parameters:
  ///   - payload: Opaque bytes, for example an encoded extension item.
  ///   - attachments: Files to store next to the payload, with distinct names.
  ///   - id: The idempotency id (1 to 128 letters, digits, `.`, `_`, `-`, not starting with
  ///     `.`). Enqueueing the same id again, for example when retrying after a crash, does
  ///     not make the application see the item twice. A random UUID when `nil`.
  ///   - whenVisible: Called once the entry is readable by consumers and before it is
  ///     flushed, for example to ring a doorbell so the consumer's wake-up overlaps the
  ///     flush. A consumer may then deliver the entry before this call returns; this call
  ///     still returns only once the entry is durable.
  /// - Returns: The entry's id.
  /// - Throws: ``ContainerError``: ``ContainerError/Code/quotaExceeded`` when the spool is
  ///   full, ``ContainerError/Code/invalidName`` for a bad id or attachment name, or an I/O
  ///   error.
  @discardableResult
  public func enqueue(
    payload: some Sequence<UInt8>, attachments: [SpoolAttachment] = [], id: String? = nil,
    whenVisible: () -> Void = {}
  ) throws(ContainerError) -> String {
    let id = try checkedID(id)
    var names = Set<String>()
    for attachment in attachments {
      try SafeName.checkAttachment(attachment.name)
      guard names.insert(attachment.name).inserted else {
        throw ContainerError(
          code: .invalidName, path: "",
          message: "Attachment name '\(attachment.name)' is used twice in one entry.")
      }
    }
    guard attachments.count <= SpoolEntryFormat.maximumAttachments else {
      throw ContainerError(
        code: .invalidName, path: "",
        message: "An entry may have at most \(SpoolEntryFormat.maximumAttachments) attachments, "
          + "not \(attachments.count).")
    }
    let payload = Array(payload)
    let usage = try entryQuotaUsage()

    if attachments.isEmpty {
      let time = Self.nextEnqueueTime()
      let bytes = SpoolEntryFormat.encode(
        enqueueTime: time, id: id, attachments: [], payload: payload)
      if bytes.count <= SpoolSegmentFormat.maximumSegmentEntry {
        try checkByteQuota(adding: Int64(bytes.count), to: usage)
        // One pwrite and one fdatasync (perhaps shared with other threads) in a segment.
        try segmentWriter.append(
          SpoolSegmentFormat.frame(bytes), visibly: visibly(Int64(bytes.count)),
          whenWritten: whenVisible)
        refreshUsageAhead()
        return id
      }
    }
    let time = Self.nextEnqueueTime()
    let scratch = "\(time).\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
    let single = attachments.isEmpty
    if !single { try temporary.makeDirectory(scratch) }
    do throws(ContainerError) {
      var manifest: [SpoolEntryFormat.Attachment] = []
      var total: Int64 = 0
      if !single {
        let entry = try temporary.openDirectory(scratch)
        for attachment in attachments {
          let record = try write(
            attachment, into: entry, budget: limits.maximumBytes - usage.bytes - total)
          manifest.append(record)
          total += Int64(record.size)
        }
      }
      let bytes = SpoolEntryFormat.encode(
        enqueueTime: time, id: id, attachments: manifest, payload: payload)
      total += Int64(bytes.count)
      try checkByteQuota(adding: total, to: usage)
      if single {
        // An entry without attachments is one file: tmp/<scratch>.
        let file = try temporary.openFile(scratch, flags: O_WRONLY | O_EXCL, create: true)
        try file.writeAll(bytes)
        try file.syncData()
      } else {
        // An entry with attachments is a directory: tmp/<scratch>/{entry, attachments…}.
        let entry = try temporary.openDirectory(scratch)
        let file = try entry.openFile(
          SpoolEntryFormat.entryFileName, flags: O_WRONLY | O_EXCL, create: true)
        try file.writeAll(bytes)
        try file.syncData()
        try entry.sync()
      }
      let final = SpoolEntryName(time: time, bytes: total, id: id).rawValue
      let renamed = try makeVisible(bytes: total) { () throws(ContainerError) in
        try temporary.rename(scratch, to: incoming, as: final, replace: false)
      }
      guard renamed else {
        throw ContainerError(
          code: .notFound, path: temporary.childPath(scratch),
          message: "The temporary entry '\(temporary.childPath(scratch))' disappeared before "
            + "it was committed; is another process cleaning tmp/ too eagerly?")
      }
      whenVisible()
      // Group commit: one fsync of new/ that started after the rename, perhaps shared with
      // other threads of this process that committed at the same moment.
      try incomingSync.sync { () throws(ContainerError) in try incoming.sync() }
      refreshUsageAhead()
      return id
    } catch {
      try? temporary.removeItem(scratch)
      throw error
    }
  }

  /// Enqueues an entry without attachments as a record, on the caller's thread, up to its
  /// flush: the first half of ``enqueue(payload:attachments:id:whenVisible:)``.
  ///
  /// Does only what cannot wait: checks the id and the quotas, encodes the entry and writes
  /// it with one `pwrite` into the segment this instance holds. The entry is then readable by
  /// consumers but not durable; ``commit(_:)`` (which flushes, so off the concurrency pool)
  /// makes it durable.
  ///
  /// - Returns: The record to commit; `nil` when nothing was written because the entry must
  ///   be enqueued the usual way: it is too large for a record, or a segment must first be
  ///   adopted or created.
  /// - Throws: As ``enqueue(payload:attachments:id:whenVisible:)``; nothing was written.
  package func writeRecord(payload: some Sequence<UInt8>, id: String?) throws(ContainerError)
    -> PendingRecord?
  {
    let id = try checkedID(id)
    let payload = Array(payload)
    let usage = try entryQuotaUsage()
    let bytes = SpoolEntryFormat.encode(
      enqueueTime: Self.nextEnqueueTime(), id: id, attachments: [], payload: payload)
    guard bytes.count <= SpoolSegmentFormat.maximumSegmentEntry else { return nil }
    try checkByteQuota(adding: Int64(bytes.count), to: usage)
    guard
      let segment = try segmentWriter.writeQuickly(
        SpoolSegmentFormat.frame(bytes), visibly: visibly(Int64(bytes.count)))
    else {
      return nil
    }
    return PendingRecord(id: id, segment: segment)
  }

  /// Gets ready, on Dispatch threads, what the next enqueue would otherwise do first: the
  /// segment its record goes into (``prepareSegment()``) and the quota check's listing
  /// (``prepareQuotaListing()``).
  ///
  /// Optional: an enqueue that finds either not ready does it itself (or waits for the one
  /// under way). The handoff's sender calls this when it is made, for its first share: an
  /// extension usually sends one share, at once.
  public func prepareForEnqueue() {
    prepareSegment()
    prepareQuotaListing()
  }

  /// Takes the segment this instance's next records go into ahead of need, on a Dispatch
  /// thread: adopting or creating one flushes (`Protocol/container.md` §4.4), which the
  /// first enqueue then does not wait for.
  package func prepareSegment() {
    segmentWriter.prepareAhead()
  }

  /// Takes the quota check's listing ahead of need, on a Dispatch thread, so that an
  /// enqueue soon after (within ``usageListingLifetime``) lists nothing before its entry is
  /// readable.
  package func prepareQuotaListing() {
    DispatchQueue.global(qos: .utility).async { self.refreshUsageAhead() }
  }

  /// Waits until no thread of this process is taking a segment for this instance ahead of
  /// need (``prepareSegment()``).
  package func waitForSegmentPreparation() {
    segmentWriter.waitForPreparation()
  }

  /// Waits until this instance runs nothing beside its callers.
  ///
  /// That is: no flush of `delivered.keys` beside a drain, no segment being taken ahead of
  /// need. The handoff benchmark calls it between a block of shares and a block of its C
  /// peer's items, so that neither side's work lands in the other's figures.
  package func waitUntilIdle() {
    deliveredFlush.wait()
    segmentWriter.waitForPreparation()
  }

  /// Makes a record that ``writeRecord(payload:id:)`` wrote durable.
  ///
  /// One `fdatasync` of its segment, perhaps shared with other threads. Only when this returns is the entry
  /// enqueued (a failure leaves it readable, as ``enqueue(payload:attachments:id:whenVisible:)``
  /// does).
  package func commit(_ record: PendingRecord) throws(ContainerError) {
    try segmentWriter.commit(record.segment)
    refreshUsageAhead()
  }

  /// Runs a record's `pwrite` as ``makeVisible(bytes:_:)`` does, counting it once written.
  private func visibly(_ bytes: Int64) -> SpoolSegmentWriter.Visibly {
    { (pwrite) throws(ContainerError) in
      _ = try self.makeVisible(bytes: bytes) { () throws(ContainerError) in
        try pwrite()
        return true
      }
    }
  }

  /// The id to store: `id`, checked, or a random one.
  private func checkedID(_ id: String?) throws(ContainerError) -> String {
    let id = id ?? Self.randomID()
    try SafeName.checkPortable(id, kind: "entry id", limit: SpoolEntryFormat.maximumIDLength)
    return id
  }

  /// The pending usage, when the entry limit leaves room for one more.
  private func entryQuotaUsage() throws(ContainerError) -> UsageSnapshot {
    let usage = try quotaUsage()
    guard usage.entries < limits.maximumEntries else {
      throw ContainerError(
        code: .quotaExceeded, path: incoming.path,
        message: "The spool '\(name)' already holds \(usage.entries) entries, its limit "
          + "(SpoolLimits.maximumEntries = \(limits.maximumEntries)). Drain it first.")
    }
    return usage
  }

  private func checkByteQuota(adding total: Int64, to usage: UsageSnapshot)
    throws(ContainerError)
  {
    guard usage.bytes + total <= limits.maximumBytes else {
      throw ContainerError(
        code: .quotaExceeded, path: incoming.path,
        message: "Adding \(total) bytes to the spool '\(name)', which holds \(usage.bytes), "
          + "would exceed its limit (SpoolLimits.maximumBytes = \(limits.maximumBytes)).")
    }
  }

  /// A random (version 4) UUID in lowercase, from the system generator (two `getrandom`
  /// calls; Foundation's `UUID()` opens, reads and closes `/dev/urandom` each time).
  static func randomID() -> String {
    var generator = SystemRandomNumberGenerator()
    let halves = [generator.next(), generator.next()] as [UInt64]
    var bytes = halves.flatMap { half in (0..<8).map { UInt8(truncatingIfNeeded: half >> ($0 * 8)) }
    }
    bytes[6] = bytes[6] & 0x0f | 0x40
    bytes[8] = bytes[8] & 0x3f | 0x80
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(36)
    for (index, byte) in bytes.enumerated() {
      if [4, 6, 8, 10].contains(index) { text.append(UInt8(ascii: "-")) }
      text.append(digits[Int(byte >> 4)])
      text.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: text, as: UTF8.self)
  }

  /// Writes one attachment file into a temporary entry and fsyncs it.
  ///
  /// - Parameter budget: The bytes the spool's quota has left; copying stops with
  ///   ``ContainerError/Code/quotaExceeded`` past it, so a file that grows while it is
  ///   read cannot fill the disk.
  private func write(
    _ attachment: SpoolAttachment, into entry: borrowing Directory, budget: Int64
  ) throws(ContainerError) -> SpoolEntryFormat.Attachment {
    let file = try entry.openFile(attachment.name, flags: O_WRONLY | O_EXCL, create: true)
    var crc = CRC32()
    var size: UInt64 = 0
    switch attachment.source {
    case .data(let data):
      try data.withUnsafeBytes { buffer in
        crc.update(buffer)
        return Result { () throws(ContainerError) in try file.writeAll(buffer) }
      }.get()
      size = UInt64(data.count)
    case .file(let url):
      let sourcePath = url.path
      // A FIFO, a device or a directory is refused before anything is read.
      let source = try FileDescriptor.openRegularFile(sourcePath)
      var chunk = [UInt8](repeating: 0, count: 256 * 1024)
      while true {
        let count = try chunk.withUnsafeMutableBytes { buffer in
          Result { () throws(ContainerError) in try source.read(into: buffer) }
        }.get()
        if count == 0 { break }
        guard Int64(size) + Int64(count) <= budget else {
          throw ContainerError(
            code: .quotaExceeded, path: sourcePath,
            message: "The attachment '\(sourcePath)' is larger than the \(budget) bytes the spool "
              + "'\(name)' has left (SpoolLimits.maximumBytes = \(limits.maximumBytes)).")
        }
        try chunk.withUnsafeBytes { buffer in
          let slice = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
          crc.update(slice)
          return Result { () throws(ContainerError) in try file.writeAll(slice) }
        }.get()
        size += UInt64(count)
      }
    }
    try file.syncData()
    return SpoolEntryFormat.Attachment(name: attachment.name, size: size, checksum: crc.value)
  }
}

/// A record written by ``Spool/writeRecord(payload:id:)`` and not yet flushed.
package struct PendingRecord: Sendable {
  /// The entry's id.
  package let id: String
  let segment: OpenSegment
}
