public import AppGroups
public import DBus
public import ExtensionItems
public import Notify

/// The extension's half of the handoff: stores items in the group's spool, then rings the
/// doorbell.
///
/// ```swift
/// let sender = try await HandoffSender.connect(
///   group: "group.example.readlater", notification: "group.example.saved")
/// try await sender.send([ExtensionItem(attributedTitle: "A page", attachments: [
///   ItemProvider(url: URL(string: "https://example.com")!)])])
/// ```
///
/// ``send(_:id:)`` does what the iOS original's `savePayload` did (`Protocol/handoff.md` §6), in an order that cannot
/// lose an item:
/// 1. encodes the items with ``ItemCodec`` (file representations, and inline data larger
///    than ``inlineDataLimit``, become spool attachments referenced by a relative path);
/// 2. enqueues them as one durable ``Spool`` entry (`spool/pendingItems` by default): when
///    this returns the share survives a crash of either process;
/// 3. posts ``notification`` and waits until the bus has routed the post.
///
/// It does not depend on notifyd: a post is a D-Bus signal, and the spool is the truth.
public final class HandoffSender: Sendable {
  /// The group container.
  public let container: GroupContainer
  /// The spool the items go into.
  public let spool: Spool
  /// The doorbell: the name posted after each share is stored.
  public let notification: NotifyName
  /// The notify center the doorbell is rung on.
  public let center: NotifyCenter

  /// The spool's name when none is given: the iOS original's `pendingItems` defaults key.
  public static var defaultSpoolName: String { "pendingItems" }
  /// Inline data representations larger than this many bytes travel as attachment files.
  public static var inlineDataLimit: Int { 64 * 1024 }

  /// Creates a sender on an open container and a connected center.
  ///
  /// - Parameters:
  ///   - container: The group container.
  ///   - notification: The name to post after storing.
  ///   - center: The center to post on.
  ///   - spoolName: The spool inside the container.
  ///   - limits: The spool's quotas.
  /// - Throws: ``HandoffError`` with code ``HandoffError/Code/container`` when the spool
  ///   cannot be opened.
  public init(
    container: GroupContainer, notification: NotifyName, center: NotifyCenter,
    spoolName: String = defaultSpoolName, limits: SpoolLimits = SpoolLimits()
  ) throws(HandoffError) {
    self.container = container
    self.notification = notification
    self.center = center
    do {
      self.spool = try Spool(container: container, name: spoolName, limits: limits)
    } catch {
      throw HandoffError(
        .container,
        "Cannot open the spool '\(spoolName)' of \(container.identifier): \(error.message)",
        cause: .container(error))
    }
    // Taking a segment flushes, and the quota check lists the spool: both are done now, on
    // Dispatch threads, so that the first share need not wait for them.
    spool.prepareForEnqueue()
  }

  /// Opens a group's container and connects to a bus.
  ///
  /// - Parameters:
  ///   - group: The group identifier, for example `group.example.readlater`.
  ///   - notification: The name to post, for example `group.example.saved`.
  ///   - bus: The bus; `NOTIFYBUS_BUS_ADDRESS`, the session bus or the embedded bus by default.
  ///   - spoolName: The spool inside the container.
  /// - Throws: ``HandoffError``: ``HandoffError/Code/container``,
  ///   ``HandoffError/Code/invalidName`` or ``HandoffError/Code/notConnected``.
  public static func connect(
    group: String, notification: String, bus: Bus = .automatic,
    spoolName: String = defaultSpoolName
  ) async throws(HandoffError) -> HandoffSender {
    let (container, name) = try Endpoint.open(group: group, notification: notification)
    let center = try await Endpoint.connect(bus)
    return try HandoffSender(
      container: container, notification: name, center: center, spoolName: spoolName)
  }

  /// Stores `items` as one share and posts ``notification``.
  ///
  /// The post is made as soon as the share is readable, before its flush to disk ends, so
  /// the app drains while the share is flushed; this returns once the share is durable and
  /// the bus routed the post, also when the calling task is cancelled meanwhile (an
  /// extension that exits right away must not take its post with it). The round trip that
  /// tells the post was routed starts once the flush ended: made at once, it ran beside the
  /// app's wake-up and drain (the bus daemon and two threads of this process woken while
  /// the app reads its doorbell), where this process needs nothing of it.
  ///
  /// Lazy representations are loaded first, each handler once (``ExtensionItem/loaded(_:)``);
  /// if one fails, nothing is stored.
  ///
  /// - Parameters:
  ///   - items: The items, for example an extension context's input items.
  ///   - id: The share's idempotency id; sending the same id again (a retry after a crash)
  ///     does not make the app see it twice. A random UUID when `nil`.
  /// - Returns: The share's id.
  /// - Throws: ``HandoffError``: ``HandoffError/Code/encoding`` or
  ///   ``HandoffError/Code/container`` or ``HandoffError/Code/loadFailed`` when nothing was
  ///   stored; ``HandoffError/Code/postFailed`` when the share is stored but the post failed.
  @discardableResult
  public func send(_ items: [ExtensionItem], id: String? = nil) async throws(HandoffError)
    -> String
  {
    let items = try await Self.loaded(items)
    // A share stored as a record is written here and rung at once: no thread switch before
    // the app can see it. The round trip that tells the bus routed the doorbell is written
    // right after it, from this thread too: the bus daemon reads both in one go and answers
    // while the share is flushed on a Dispatch thread, so the sender waits for the longer
    // of the two, not for one after the other (`Protocol/handoff.md` §3).
    if let pending = try writeRecord(items, id: id) {
      let posted = Result { () throws(NotifyError) in try center.post(notification) }
      let routing = routing(posted)
      let spool = self.spool
      let flush = BlockingWork { () throws(ContainerError) in try spool.commit(pending) }
      var unflushed: ContainerError?
      do {
        try await flush.value
      } catch {
        unflushed = error
      }
      let routed = await untilRouted(routing)
      if let unflushed { throw storeFailure(unflushed) }
      try report(for: pending.id, posted: posted, routed: routed)
      return pending.id
    }
    // Storing may flush to disk before the share is readable: off the concurrency pool. The
    // doorbell rings as soon as the share is readable, so the app wakes and drains while
    // the share is being flushed; its round trip is written right after it.
    let (id, posted, routing) = try await runBlocking { () throws(HandoffError) in
      var posted: Result<Void, NotifyError> = .success(())
      var routing: NotifyCenter.PendingSynchronization?
      let id = try self.store(items, id: id) {
        posted = Result { () throws(NotifyError) in try self.center.post(self.notification) }
        routing = self.routing(posted)
      }
      return (id, posted, routing)
    }
    let routed = await untilRouted(routing)
    try report(for: id, posted: posted, routed: routed)
    return id
  }

  /// Stores `items` as one share without posting.
  ///
  /// - Parameters:
  ///   - items: The items.
  ///   - id: The idempotency id, or `nil` for a random one.
  /// - Returns: The share's id.
  /// - Throws: ``HandoffError`` with code ``HandoffError/Code/encoding`` or
  ///   ``HandoffError/Code/container``; nothing is stored then.
  @discardableResult
  public func store(_ items: [ExtensionItem], id: String? = nil) throws(HandoffError) -> String {
    try store(items, id: id, whenVisible: {})
  }

  /// Stores `items`, calling `whenVisible` once the share is readable by the app and before
  /// it is flushed (``Spool/enqueue(payload:attachments:id:whenVisible:)``).
  func store(_ items: [ExtensionItem], id: String?, whenVisible: () -> Void)
    throws(HandoffError) -> String
  {
    // Attachments are packed from the representations at hand: a lazy one must be loaded.
    for item in items {
      for provider in item.attachments {
        if let lazy = provider.lazyRepresentations.first {
          throw HandoffError(
            .encoding,
            "Cannot store the shared items: the \(lazy.type) representation is produced by a "
              + "load handler; send(_:id:) loads it, store(_:id:) does not")
        }
      }
    }
    let (payload, attachments) = try Self.encoded(items)
    do {
      return try spool.enqueue(
        payload: payload, attachments: attachments, id: id, whenVisible: whenVisible)
    } catch {
      throw storeFailure(error)
    }
  }

  /// Writes `items` as a record without flushing it (``Spool/writeRecord(payload:id:)``),
  /// or `nil` when they must be stored the usual way (attachments, a lazy representation,
  /// too large, a segment to take first).
  private func writeRecord(_ items: [ExtensionItem], id: String?) throws(HandoffError)
    -> PendingRecord?
  {
    guard items.allSatisfy({ $0.attachments.allSatisfy { $0.lazyRepresentations.isEmpty } })
    else { return nil }
    let (payload, attachments) = try Self.encoded(items)
    guard attachments.isEmpty else { return nil }
    do {
      return try spool.writeRecord(payload: payload, id: id)
    } catch {
      throw storeFailure(error)
    }
  }

  /// The payload and attachment files that store `items`.
  private static func encoded(_ items: [ExtensionItem]) throws(HandoffError) -> (
    [UInt8], [SpoolAttachment]
  ) {
    let packed = ShareAttachments.pack(items, inlineDataLimit: Self.inlineDataLimit)
    do {
      return (try ItemCodec.encode(packed.items), packed.attachments)
    } catch {
      throw HandoffError(
        .encoding, "Cannot encode the shared items: \(error)", cause: .codec(error))
    }
  }

  private func storeFailure(_ error: ContainerError) -> HandoffError {
    HandoffError(
      .container,
      "Cannot store the share in '\(spool.path)' of \(container.identifier): \(error.message)",
      cause: .container(error))
  }

  /// `items` with their lazy representations loaded, as ``HandoffError``.
  static func loaded(_ items: [ExtensionItem]) async throws(HandoffError) -> [ExtensionItem] {
    do {
      return try await ExtensionItem.loaded(items)
    } catch {
      throw HandoffError(
        .loadFailed, "Cannot load the shared items: \(error.message)", cause: .provider(error))
    }
  }

  /// Posts ``notification`` and waits until the bus has routed it, also when the calling
  /// task is cancelled meanwhile.
  ///
  /// - Throws: ``HandoffError`` with code ``HandoffError/Code/postFailed``.
  public func ring() async throws(HandoffError) {
    let posted = Result { () throws(NotifyError) in try center.post(notification) }
    try report(for: nil, posted: posted, routed: await untilRouted(routing(posted)))
  }

  /// The round trip that tells the bus routed the post, written now, unless the post
  /// failed (`posted`).
  private func routing(_ posted: Result<Void, NotifyError>)
    -> NotifyCenter.PendingSynchronization?
  {
    guard case .success = posted else { return nil }
    return center.startSynchronizing()
  }

  /// Waits until the bus has answered `routing` (`Protocol/handoff.md` §3), whether or not
  /// the calling task is cancelled.
  ///
  /// - Returns: The failure of the round trip, or `nil`.
  private func untilRouted(_ routing: NotifyCenter.PendingSynchronization?) async
    -> NotifyError?
  {
    do throws(NotifyError) {
      try await routing?.wait()
      return nil
    } catch {
      return error
    }
  }

  /// Throws how the post of a share (`id`), or of a ring, went.
  private func report(for id: String?, posted: Result<Void, NotifyError>, routed: NotifyError?)
    throws(HandoffError)
  {
    let stored = id.map { " The share \($0) is stored and will be drained later." } ?? ""
    do throws(NotifyError) {
      try posted.get()
      if let routed { throw routed }
    } catch {
      throw HandoffError(
        .postFailed, "Cannot post '\(notification)': \(error.message).\(stored)",
        cause: .notify(error))
    }
  }
}
