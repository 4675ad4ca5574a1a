public import Foundation

/// An entry handed to a spool consumer.
///
/// The attachment files exist only while the handler runs: the spool removes them after the
/// handler returns successfully. Copy or move (rename) them if the application keeps them.
public struct SpoolEntry: Sendable {
  /// The entry's idempotency id; the application sees each id once.
  public var id: String
  /// When the producer enqueued the entry, at microsecond precision.
  public var enqueueDate: Date
  /// The producer's opaque payload bytes, for example an encoded extension item.
  public var payload: [UInt8]
  /// The attachment files, in the producer's order.
  public var attachments: [Attachment]

  /// An attachment file of a claimed entry.
  public struct Attachment: Sendable, Hashable {
    /// The attachment's name.
    public var name: String
    /// Its size in bytes (already checked against the entry's manifest).
    public var size: Int64
    /// The file, inside the claimed entry's directory.
    public var url: URL
  }
}

/// What one call to ``Spool/drain(maxEntries:waitForOtherConsumers:_:)`` did.
public struct DrainSummary: Sendable {
  /// Entries handed to the handler and removed after it succeeded.
  public var delivered = 0
  /// Entries removed without calling the handler because their id was already delivered.
  public var duplicates = 0
  /// Entries found claimed by a consumer that stopped before finishing them.
  public var recovered = 0
  /// Temporary entries of crashed producers that were removed.
  public var staleTemporariesRemoved = 0
  /// One error per corrupt entry moved to `corrupt/`; the drain continued past each.
  public var setAside: [ContainerError] = []

  /// Creates an empty summary.
  public init() {}
}

/// Limits that keep a spool bounded.
public struct SpoolLimits: Sendable, Hashable {
  /// The most entries that may be pending (new and claimed).
  public var maximumEntries: Int
  /// The most bytes (entry files plus attachments) that may be pending.
  public var maximumBytes: Int64
  /// How old an abandoned temporary entry must be before a drain removes it.
  public var staleTemporaryAge: Duration
  /// How many delivered ids are remembered to drop redelivered duplicates.
  public var deliveredIDCapacity: Int

  /// Creates limits.
  ///
  /// - Parameters:
  ///   - maximumEntries: The most pending entries; 100,000 by default.
  ///   - maximumBytes: The most pending bytes; 4 GiB by default.
  ///   - staleTemporaryAge: The age of an abandoned temporary entry; one hour by default.
  ///   - deliveredIDCapacity: Delivered ids remembered; 100,000 by default.
  public init(
    maximumEntries: Int = 100_000, maximumBytes: Int64 = 4 << 30,
    staleTemporaryAge: Duration = .seconds(3600), deliveredIDCapacity: Int = 100_000
  ) {
    self.maximumEntries = maximumEntries
    self.maximumBytes = maximumBytes
    self.staleTemporaryAge = staleTemporaryAge
    self.deliveredIDCapacity = deliveredIDCapacity
  }
}
