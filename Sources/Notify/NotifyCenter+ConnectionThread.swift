import DBus
import Synchronization

extension NotifyCenter {
  /// Registers a handler that runs on the connection's own thread with the token each
  /// time `name` is posted: delivery for a caller that asks for no particular queue
  /// (``register(_:queue:handler:)`` with `queue: nil`).
  ///
  /// A post reaches the handler as soon as the connection has read it, without the hop
  /// to a dispatch queue (a thread wakeup) that ``register(_:queue:handler:)`` makes.
  ///
  /// - Calls are made one at a time, in the order posts arrived. `handler` must return
  ///   quickly and must not block or wait for this center's connection: while it runs,
  ///   the connection reads nothing else.
  /// - It never runs after ``cancel(_:)`` has returned. A cancel from another thread waits
  ///   for a call under way to end; a cancel from a handler takes effect at once.
  /// - Posts that arrive while suspended become one call at the last ``resume(_:)``, on
  ///   the connection's thread.
  func registerOnConnectionThread(
    _ name: NotifyName, handler: @escaping @Sendable (NotifyToken) -> Void
  ) async throws(NotifyError) -> NotifyToken {
    try await add(.name(name), .connectionThread(ConnectionThreadHandler(handler)))
  }

  /// Calls a connection-thread handler, from ``perform(_:batched:)``: at once on the
  /// connection's thread, or after the work queued there from elsewhere (the delivery
  /// that ends a suspension).
  func call(_ handler: ConnectionThreadHandler, _ token: NotifyToken) {
    guard connection.isOnConnectionThread else {
      connection.afterDispatch { [weak self] in self?.call(handler, token) }
      return
    }
    connectionHandlerGate.withLock { _ in
      // Cancelled since the post was recorded: a cancel from another thread then waits
      // for this lock, so the check and the call are one step for it.
      guard handler.isLive else { return }
      handler.body(token)
    }
  }
}

/// The handler of a registration made with no queue, and whether it is still live.
///
/// Cancelling clears the flag under the registry's lock; the call reads it under
/// ``NotifyCenter/connectionHandlerGate`` with an atomic load, instead of looking the
/// token up under the registry's lock for every post.
final class ConnectionThreadHandler: Sendable {
  let body: @Sendable (NotifyToken) -> Void
  private let live = Atomic<Bool>(true)

  init(_ body: @escaping @Sendable (NotifyToken) -> Void) { self.body = body }

  var isLive: Bool { live.load(ordering: .sequentiallyConsistent) }

  func cancel() { live.store(false, ordering: .sequentiallyConsistent) }
}
