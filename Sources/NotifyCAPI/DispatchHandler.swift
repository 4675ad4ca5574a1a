import CDispatch
import CNotifyDispatch
import DBus
import Notify
import Synchronization

/// A C caller's dispatch registration: its queue (retained while the registration or a
/// queued run needs it), its block (copied by Swift when stored), and whether
/// `notify_cancel` has ended it.
///
/// Posts that arrive while a run is queued and not started fold into it, as in the Notify
/// layer's dispatch registrations. A delivery allocates nothing: the run queued on the
/// caller's queue is this object, retained once per queued run.
final class DispatchHandler: @unchecked Sendable {
  // Safety of @unchecked Sendable: every stored property is immutable after init or
  // atomic, but `center`, set once by ``attach(to:)`` before the registration exists (the
  // center's registry lock orders it before any call for it); a dispatch queue may be
  // used from any thread, and the block is only called on that queue.
  private let queue: OpaquePointer
  private let block: @convention(block) (Int32) -> Void
  private var center: NotifyCenter?
  private let queued = Atomic<Bool>(false)
  private let cancelled = Atomic<Bool>(false)
  /// Whether `notify_cancel` can find this forwarder (``CLibrary/adopt(_:token:center:)``);
  /// until then a run asks the center whether the token is live.
  private let registered = Atomic<Bool>(false)
  private let token = Atomic<Int32>(-1)
  /// ``enqueue()`` as a closure made once, so that deferring it to the end of the
  /// connection's batch allocates nothing.
  private var enqueueLater: (@Sendable () -> Void)?

  init(queue: OpaquePointer, block: @escaping @convention(block) (Int32) -> Void) {
    notifybus_dispatch_retain(UnsafeMutableRawPointer(queue))
    self.queue = queue
    self.block = block
    enqueueLater = { [weak self] in self?.enqueue() }
  }

  /// Sets the center the registration is made with, before registering.
  func attach(to center: NotifyCenter) {
    self.center = center
  }

  deinit {
    notifybus_dispatch_release(UnsafeMutableRawPointer(queue))
  }

  /// Ends the registration.
  ///
  /// A run queued or queued later does not call the block: after this returns the block
  /// never starts (`notify_cancel`'s promise).
  func cancel() {
    cancelled.store(true, ordering: .sequentiallyConsistent)
  }

  /// From now on ``cancel()`` is called when the token is cancelled.
  func markRegistered() {
    registered.store(true, ordering: .sequentiallyConsistent)
  }

  /// Queues a run of the block on the caller's queue unless one is queued and not
  /// started.
  ///
  /// On the connection's thread the run is queued once the batch of posts being read is
  /// handled, so that a burst costs one hop to the caller's queue, not one per post that
  /// found the block already started.
  func forward(_ token: NotifyToken) {
    self.token.store(token.rawValue, ordering: .relaxed)
    guard let center, !cancelled.load(ordering: .sequentiallyConsistent),
      !queued.exchange(true, ordering: .acquiringAndReleasing)
    else { return }
    if center.connection.isOnConnectionThread, let enqueueLater {
      center.connection.afterDispatch(enqueueLater)
    } else {
      enqueue()
    }
  }

  private func enqueue() {
    dispatch_async_f(queue, Unmanaged.passRetained(self).toOpaque()) { context in
      Unmanaged<DispatchHandler>.fromOpaque(context!).takeRetainedValue().run()
    }
  }

  /// One run, on the caller's queue.
  private func run() {
    queued.store(false, ordering: .releasing)
    let token = token.load(ordering: .relaxed)
    guard !cancelled.load(ordering: .sequentiallyConsistent),
      registered.load(ordering: .sequentiallyConsistent)
        || center?.isValid(NotifyToken(rawValue: token)) == true
    else { return }
    block(token)
  }
}
