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
    let connection = self.connection
    let call: @Sendable (NotifyToken) -> Void = { [weak self] token in
      guard let self else { return }
      self.connectionHandlerGate.withLock { _ in
        guard self.isValid(token) else { return }
        handler(token)
      }
    }
    return try await add(
      .name(name),
      .immediate { token in
        if connection.isOnConnectionThread {
          call(token)
        } else {
          connection.afterDispatch { call(token) }
        }
      })
  }
}
