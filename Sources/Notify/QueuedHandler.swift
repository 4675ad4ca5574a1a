import Dispatch
import Synchronization

/// A dispatch registration's handler and queue, and the state its queued runs share.
///
/// Posts that arrive while a run is queued and not started fold into it (``schedule()``
/// says whether one must be queued). A run checks as it starts that the registration was
/// not cancelled, with an atomic load instead of the registry's lock, so that the
/// handler never starts after ``NotifyCenter/cancel(_:)`` has returned. The closures a
/// delivery hands on are made once, here: queuing a run costs what `DispatchQueue.async`
/// costs for a block that already exists, and deferring it to the end of the
/// connection's batch allocates nothing.
final class QueuedHandler: @unchecked Sendable {
  // Safety of @unchecked Sendable: `run` and `enqueue` are written once, in init, before
  // the object is shared, and only read afterwards; everything else is immutable or
  // atomic (a dispatch queue may be used from any thread).
  let queue: DispatchQueue
  private let handler: @Sendable (NotifyToken) -> Void
  private let token: NotifyToken
  private let queued = Atomic<Bool>(false)
  private let cancelled = Atomic<Bool>(false)
  /// One run of the handler, as a block: passing it to `DispatchQueue.async` copies no
  /// closure into a new block.
  private var run: @convention(block) @Sendable () -> Void = {}
  /// Queues ``run`` on ``queue``.
  private(set) var enqueue: @Sendable () -> Void = {}

  init(queue: DispatchQueue, token: NotifyToken, handler: @escaping @Sendable (NotifyToken) -> Void)
  {
    self.queue = queue
    self.token = token
    self.handler = handler
    // Weak: a run or a deferred enqueue that outlives the registration does nothing.
    run = { [weak self] in self?.start() }
    enqueue = { [weak self] in
      guard let self else { return }
      self.queue.async(execute: self.run)
    }
  }

  /// Whether a post must queue a run: none is queued and not started.
  ///
  /// Called under the registry's lock.
  func schedule() -> Bool {
    !queued.exchange(true, ordering: .sequentiallyConsistent)
  }

  /// Ends the registration: a run queued or queued later does not call the handler.
  func cancel() {
    cancelled.store(true, ordering: .sequentiallyConsistent)
  }

  private func start() {
    // Cleared first: a post from now on queues another run, which the handler's run
    // under way may not have seen.
    queued.store(false, ordering: .sequentiallyConsistent)
    guard !cancelled.load(ordering: .sequentiallyConsistent) else { return }
    handler(token)
  }
}
