import Dispatch
import Synchronization
import SystemSupport

/// Runs one flush at a time on a Dispatch queue of its own, so that the thread that asked
/// for it goes on at once; the first failure is kept for that thread to report.
///
/// A drain flushes `delivered.keys` this way once half of the ids a machine crash may hand
/// over again are waiting (`Protocol/container.md` §4.6): a drain woken for each share then
/// never waits for the disk, which the next share's drain would otherwise wait behind.
final class BackgroundFlush: Sendable {
  private let queue = DispatchQueue(label: "org.notifybus.spool.flush")
  private struct State {
    var running = false
    var failure: ContainerError?
  }
  private let state = Mutex(State())
  /// For tests: runs in each flush before its `fdatasync`; what it throws is the flush's
  /// failure, as if the `fdatasync` had failed.
  let fault = Mutex<(@Sendable () throws(ContainerError) -> Void)?>(nil)
  /// For tests: runs in each flush before its `fsync` of the log's directory (when the
  /// flush makes one); what it throws is that `fsync`'s failure.
  let directoryFault = Mutex<(@Sendable () throws(ContainerError) -> Void)?>(nil)

  /// Starts `body` unless a flush is running (it may have started before what the caller
  /// wrote, and the caller asks again later).
  func start(_ body: @escaping @Sendable () throws(ContainerError) -> Void) {
    let idle = state.withLock { state in
      guard !state.running else { return false }
      state.running = true
      return true
    }
    guard idle else { return }
    queue.async {
      let outcome = Result { () throws(ContainerError) in try body() }
      self.state.withLock { state in
        state.running = false
        if case .failure(let error) = outcome, state.failure == nil { state.failure = error }
      }
    }
  }

  /// The failure of a flush that ended since the last call, if any.
  func takeFailure() -> ContainerError? {
    state.withLock { state in
      defer { state.failure = nil }
      return state.failure
    }
  }

  /// `fdatasync`s `file` for a flush's body (after ``fault``).
  func sync(_ file: borrowing FileDescriptor) throws(ContainerError) {
    if let fault = fault.withLock({ $0 }) { try fault() }
    try file.syncData()
  }

  /// `fsync`s the log's directory for a flush's body (after ``directoryFault``), if any.
  ///
  /// - Returns: Whether there was one.
  func sync(directory: borrowing Directory?) throws(ContainerError) -> Bool {
    // A switch, not a comparison with nil: Swift 6.3's optimizer crashed (SimplifyCFG) on
    // `directory != nil` for this borrowed noncopyable optional in a release build.
    switch directory {
    case .some(let directory):
      if let fault = directoryFault.withLock({ $0 }) { try fault() }
      try directory.sync()
      return true
    case .none:
      return false
    }
  }

  /// Waits until no flush is running: one that started before this call has ended.
  func wait() { queue.sync {} }
}
