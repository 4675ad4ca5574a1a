extension NotifyCenter {
  /// Registers a handler called where each post is recorded: on the connection's own
  /// thread as the post arrives (on the caller's thread for the delivery that ends a
  /// ``resume(_:)``).
  ///
  /// It saves the hop to a dispatch queue, for code that forwards the notification itself:
  /// the C library queues the C caller's block on the caller's queue from here. `handler`
  /// must return at once and must not wait for the center. A call for a post that arrived
  /// just before ``cancel(_:)`` may still be made as cancel returns: code that forwards
  /// checks ``isValid(_:)`` where the work finally runs, as the C library does. Posts that
  /// arrive while suspended become one call at the last ``resume(_:)``.
  public func register(
    _ name: NotifyName, immediate handler: @escaping @Sendable (NotifyToken) -> Void
  ) async throws(NotifyError) -> NotifyToken {
    try await add(.name(name), .immediate(handler))
  }
}
