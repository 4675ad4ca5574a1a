import CDispatch
import CNotifyDispatch
import DBus
import Notify
import Synchronization

/// A C caller's dispatch registration: its queue (retained while the registration or a
/// queued call needs it) and its block (copied by Swift when stored).
///
/// Posts that arrive while a run is queued and not started fold into it, as in the Notify
/// layer's dispatch registrations.
final class DispatchHandler: @unchecked Sendable {
  // Safety of @unchecked Sendable: `queue` and `block` are immutable after init; a dispatch
  // queue may be used from any thread, and the block is only called on that queue.
  private let queue: OpaquePointer
  private let block: @convention(block) (Int32) -> Void
  private let queued = Atomic<Bool>(false)

  init(queue: OpaquePointer, block: @escaping @convention(block) (Int32) -> Void) {
    notifybus_dispatch_retain(UnsafeMutableRawPointer(queue))
    self.queue = queue
    self.block = block
  }

  deinit {
    notifybus_dispatch_release(UnsafeMutableRawPointer(queue))
  }

  /// Queues the block on the caller's queue; it runs only if `token` is still live when
  /// it starts, so it never runs after `notify_cancel` has returned.
  ///
  /// On the connection's thread the block is queued once the batch of posts being read is
  /// handled, so that a burst costs one hop to the caller's queue, not one per post that
  /// found the block already started.
  func forward(_ token: NotifyToken, center: NotifyCenter) {
    guard !queued.exchange(true, ordering: .acquiringAndReleasing) else { return }
    let call = QueuedCall(handler: self, token: token, center: center)
    if center.connection.isOnConnectionThread {
      center.connection.afterDispatch { call.handler.enqueue(call) }
    } else {
      enqueue(call)
    }
  }

  private func enqueue(_ call: QueuedCall) {
    let call = Unmanaged.passRetained(call)
    dispatch_async_f(queue, call.toOpaque()) { context in
      let call = Unmanaged<QueuedCall>.fromOpaque(context!).takeRetainedValue()
      call.handler.queued.store(false, ordering: .releasing)
      guard call.center.isValid(call.token) else { return }
      call.handler.block(call.token.rawValue)
    }
  }
}

/// One queued run of a ``DispatchHandler``.
private final class QueuedCall: Sendable {
  let handler: DispatchHandler
  let token: NotifyToken
  let center: NotifyCenter

  init(handler: DispatchHandler, token: NotifyToken, center: NotifyCenter) {
    self.handler = handler
    self.token = token
    self.center = center
  }
}
