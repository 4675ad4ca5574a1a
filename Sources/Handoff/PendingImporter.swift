public import AppGroups
public import DBus
import ExtensionItems
import Foundation
public import Notify
import Synchronization

/// The app's half of the handoff: drains the group's spool at start and on every doorbell,
/// handing each share to the app once.
///
/// Named after the iOS original's `PendingImporter`, with the same flow and none of its race
/// (see `Protocol/handoff.md` for the mapping):
///
/// ```swift
/// let importer = try await PendingImporter.connect(
///   group: "group.example.readlater", notification: "group.example.saved",
///   deduplication: .byURL())
/// try await importer.run { share in
///   try library.insert(share)          // idempotent by share.id
/// }
/// ```
///
/// Guarantees:
/// - **The spool is the truth, the doorbell only a hint.** ``run(onDrain:onFailure:_:)`` registers
///   for the notification first and then drains, so a share stored before the app started,
///   or while it was not listening, is drained at start; posts that arrive while a drain
///   runs coalesce into one more drain, so nothing stored before a post is missed.
/// - **At least once, and each share id once to a handler that returns.** A share leaves the
///   spool only after the handler returned. A handler that throws, or an app killed in the
///   middle, leaves the share for the next drain. Make the handler idempotent by
///   ``ReceivedShare/id`` (a unique key) to get exactly-once storage.
/// - **Dedupe** by a key (``Deduplication/byURL(setName:capacity:)``) drops a share whose key
///   a previous handler call already imported.
public final class PendingImporter: Sendable {
  /// The group container.
  public let container: GroupContainer
  /// The spool shares are drained from.
  public let spool: Spool
  /// The doorbell.
  public let notification: NotifyName
  /// The notify center the doorbell is heard on.
  public let center: NotifyCenter
  /// How shares already imported are dropped, if at all.
  public let deduplication: Deduplication?
  private let seenKeys: SeenKeys?
  private let runningTotals = Mutex(DrainReport())

  /// What a drain did.
  public struct DrainReport: Sendable, Hashable {
    /// Shares the handler returned for, and that left the spool.
    public var imported = 0
    /// Shares dropped because their deduplication key was imported before.
    public var duplicates = 0
    /// Shares whose items could not be decoded; their bytes are kept in
    /// `handoff-rejected/<id>.items` in the container (see ``rejected``).
    public var undecodable = 0
    /// Where the bytes of each undecodable share were kept, one path per share.
    public var rejected: [String] = []
    /// Corrupt spool entries the drain moved to the spool's `corrupt/` directory.
    ///
    /// One error each, naming the entry, the problem and where it went. The drain
    /// continued past each; nothing in them reached the handler.
    public var setAside: [ContainerError] = []
    /// Shares delivered again after a consumer died while handling them.
    public var recovered = 0
    /// Shares the spool dropped because their id was delivered before.
    public var redelivered = 0

    /// Creates an empty report.
    public init() {}
  }

  /// Creates an importer on an open container and a connected center.
  ///
  /// - Parameters:
  ///   - container: The group container.
  ///   - notification: The doorbell name.
  ///   - center: The center to listen on.
  ///   - spoolName: The spool inside the container.
  ///   - deduplication: How to drop shares already imported; `nil` keeps every share.
  /// - Throws: ``HandoffError`` with code ``HandoffError/Code/container``.
  public init(
    container: GroupContainer, notification: NotifyName, center: NotifyCenter,
    spoolName: String = HandoffSender.defaultSpoolName, deduplication: Deduplication? = nil
  ) throws(HandoffError) {
    self.container = container
    self.notification = notification
    self.center = center
    self.deduplication = deduplication
    do {
      self.spool = try Spool(container: container, name: spoolName)
      self.seenKeys = try deduplication.map { policy throws(ContainerError) in
        try SeenKeys(container: container, name: policy.setName, capacity: policy.capacity)
      }
    } catch {
      throw HandoffError(
        .container,
        "Cannot open the spool '\(spoolName)'"
          + (deduplication.map { " or the dedupe set '\($0.setName)'" } ?? "")
          + " of \(container.identifier): \(error.message)",
        cause: .container(error))
    }
  }

  /// Opens a group's container and connects to a bus.
  ///
  /// - Parameters:
  ///   - group: The group identifier.
  ///   - notification: The doorbell name.
  ///   - bus: The bus; `NOTIFYBUS_BUS_ADDRESS`, the session bus or the embedded bus by default.
  ///   - spoolName: The spool inside the container.
  ///   - deduplication: How to drop shares already imported.
  /// - Throws: ``HandoffError``.
  public static func connect(
    group: String, notification: String, bus: Bus = .automatic,
    spoolName: String = HandoffSender.defaultSpoolName, deduplication: Deduplication? = nil
  ) async throws(HandoffError) -> PendingImporter {
    let (container, name) = try Endpoint.open(group: group, notification: notification)
    let center = try await Endpoint.connect(bus)
    return try PendingImporter(
      container: container, notification: name, center: center, spoolName: spoolName,
      deduplication: deduplication)
  }

  /// What every drain of this importer did so far, added up.
  public var totals: DrainReport { runningTotals.withLock { $0 } }

  /// The number of shares imported so far: the iOS original's `importedCount`.
  public var importedCount: Int { totals.imported }

  /// Drains the spool once: the iOS original's `drainPending(into:)`.
  ///
  /// Each share is handed to `handler` in the order it was stored and removed after the
  /// handler returns. Cancelling the task stops the drain before the next share.
  ///
  /// - Parameter handler: Imports one share; attachment files exist only while it runs.
  /// - Returns: What this drain did.
  /// - Throws: The handler's error (that share and the ones after it stay for the next
  ///   drain), `CancellationError`, or ``HandoffError`` with code
  ///   ``HandoffError/Code/container``.
  @discardableResult
  public func drainPending(_ handler: (ReceivedShare) async throws -> Void) async throws
    -> DrainReport
  {
    var report = DrainReport()
    defer {
      let done = report
      runningTotals.withLock { totals in
        totals.imported += done.imported
        totals.duplicates += done.duplicates
        totals.undecodable += done.undecodable
        totals.recovered += done.recovered
        totals.redelivered += done.redelivered
        totals.rejected += done.rejected
        totals.setAside += done.setAside
      }
    }
    do {
      let summary = try await spool.drain { entry in
        try Task.checkCancellation()
        let items: [ExtensionItem]
        do {
          items = try ItemCodec.decode(entry.payload)
        } catch {
          report.rejected.append(
            try await runBlocking { () throws(ContainerError) in try self.keepRejected(entry) })
          report.undecodable += 1
          return
        }
        let key = deduplication?.key(items)
        // The dedupe set locks and flushes its file: off the concurrency pool.
        if let key, let seenKeys,
          try await runBlocking({ () throws(ContainerError) in try seenKeys.contains(key) })
        {
          report.duplicates += 1
          return
        }
        let share = ReceivedShare(
          id: entry.id, enqueueDate: entry.enqueueDate,
          items: ShareAttachments.unpack(items, attachments: entry.attachments),
          attachments: entry.attachments)
        try await handler(share)
        if let key, let seenKeys {
          _ = try await runBlocking { () throws(ContainerError) in try seenKeys.insert(key) }
        }
        report.imported += 1
      }
      report.recovered += summary.recovered
      report.redelivered += summary.duplicates
      report.setAside += summary.setAside
      return report
    } catch let error as ContainerError {
      throw HandoffError(
        .container,
        "Cannot drain the spool '\(spool.name)' of \(container.identifier): \(error.message)",
        cause: .container(error))
    }
  }

  /// Drains at start, again after every post of ``notification``, and again whenever a
  /// producer adds to the spool, until the task is cancelled.
  ///
  /// The registration is in place before the first drain. Besides the doorbell, the spool's
  /// directories are watched with inotify (``AppGroups/SpoolWatch``, on the connection's
  /// thread too): a share stored as a record wakes the app as soon as it is written, one
  /// wakeup where the doorbell takes two (the bus daemon's, then the app's), and a share
  /// stored by a producer that never rings is drained all the same. Wakeups of either kind
  /// that come during a drain coalesce into one more drain. When inotify cannot be had (a
  /// limit of watches), the doorbell alone wakes the app, as before. A handler error is passed to
  /// `onFailure` and the share stays in the spool; the next post (or the next start) drains
  /// it again.
  ///
  /// Called from code not isolated to an actor, the drains, `handler` and the callbacks
  /// run on the center's connection thread (as a task preferring ``DBus/BusConnection/taskExecutor``),
  /// which reads the doorbell: a share reaches `handler` without a thread switch. That
  /// thread reads nothing else for the center while they run, so `handler` should hand long
  /// blocking work (a database write that waits for the disk) to another thread or actor,
  /// as code on the concurrency pool should; the drain's own waits (locks, flushes) already
  /// run on Dispatch threads.
  ///
  /// - Parameters:
  ///   - onDrain: Told why each drain starts: the post (possibly standing for several
  ///     coalesced posts and spool changes), or `nil` for the drain at start and for one
  ///     that only a change of the spool started.
  ///   - onFailure: Told of each handler error.
  ///   - handler: Imports one share.
  /// - Throws: ``HandoffError`` with code ``HandoffError/Code/notConnected`` when the
  ///   registration fails, or ``HandoffError/Code/container``.
  public func run(
    onDrain: (NotifyEvent?) -> Void = { _ in },
    onFailure: (any Error) -> Void = { _ in },
    _ handler: (ReceivedShare) async throws -> Void
  ) async throws(HandoffError) {
    // The center's thread reads each doorbell and resumes this loop itself: the drain
    // starts without waking another thread.
    try await withTaskExecutorPreference(center.connection.taskExecutor) {
      () async throws(HandoffError) in
      let events: NotifyEvents
      do throws(NotifyError) {
        events = try await center.events(for: notification, bufferSize: 1)
      } catch {
        throw HandoffError(
          .notConnected, "Cannot watch '\(notification)': \(error.message)",
          cause: .notify(error))
      }
      // One wakeup stands for any number of doorbells and spool changes (a buffer of one);
      // the newest doorbell is kept for `onDrain`, never replaced by a spool change.
      let (wakeups, wake) = AsyncStream.makeStream(
        of: Void.self, bufferingPolicy: .bufferingNewest(1))
      let lastDoorbell = Mutex<NotifyEvent?>(nil)
      let connection = center.connection
      let doorbells = Task(executorPreference: connection.taskExecutor) {
        for await event in events {
          lastDoorbell.withLock { $0 = event }
          wake.yield()
        }
        wake.finish()
      }
      var watch: Int?
      if let spoolWatch = try? SpoolWatch(spool) {
        watch = await connection.watchReadable(spoolWatch.descriptor) {
          if spoolWatch.readChanges() { wake.yield() }
        }
      }
      var failure: HandoffError?
      do throws(HandoffError) {
        onDrain(nil)
        try await drainReporting(onFailure, handler)
        for await _ in wakeups {
          onDrain(
            lastDoorbell.withLock { event in
              defer { event = nil }
              return event
            })
          try await drainReporting(onFailure, handler)
        }
      } catch {
        failure = error
      }
      doorbells.cancel()
      if let watch { await connection.stopWatching(watch) }
      if let failure { throw failure }
    }
  }

  private func drainReporting(
    _ onFailure: (any Error) -> Void, _ handler: (ReceivedShare) async throws -> Void
  ) async throws(HandoffError) {
    do {
      try await drainPending(handler)
    } catch let error as HandoffError {
      throw error
    } catch {
      if !Task.isCancelled { onFailure(error) }
    }
  }

  /// Keeps the bytes of a share that cannot be decoded, for someone to look at, in
  /// `handoff-rejected/<id>.items` (0600 in a 0700 directory, never through a link).
  ///
  /// - Returns: The file's path.
  private func keepRejected(_ entry: SpoolEntry) throws(ContainerError) -> String {
    try container.replaceFile(
      entry.id + ".items", with: Array(entry.payload), in: ["handoff-rejected"])
  }
}
