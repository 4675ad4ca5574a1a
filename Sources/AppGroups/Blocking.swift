import Dispatch
import Synchronization

/// Runs `body`, which may block on `flock` or `fsync`, on a Dispatch thread, and returns
/// its result to the calling task.
///
/// Async code calls the container's synchronous operations through this, so a drain that
/// waits for another consumer's lock, or a store that waits for the disk, never holds a
/// thread of the Swift concurrency pool.
package func runBlocking<T: Sendable, Failure: Error>(
  _ body: @escaping @Sendable () throws(Failure) -> T
) async throws(Failure) -> T {
  let result = await withCheckedContinuation {
    (done: CheckedContinuation<Result<T, Failure>, Never>) in
    DispatchQueue.global().async {
      done.resume(returning: Result { () throws(Failure) in try body() })
    }
  }
  return try result.get()
}

/// Work that may block, started on a Dispatch thread at once; its result is awaited later.
///
/// Where ``runBlocking(_:)`` suspends its caller until the work ends, this lets the caller
/// go on meanwhile without a task of its own (a `Task` or an `async let` wakes a thread of
/// the concurrency pool to start): a share's flush runs while its sender waits for the bus.
package final class BlockingWork<T: Sendable, Failure: Error>: Sendable {
  private enum State {
    case running
    case waiting(CheckedContinuation<Result<T, Failure>, Never>)
    case done(Result<T, Failure>)
  }
  private let state = Mutex(State.running)

  /// Starts `body` on a Dispatch thread.
  package init(_ body: @escaping @Sendable () throws(Failure) -> T) {
    DispatchQueue.global().async {
      let result = Result { () throws(Failure) in try body() }
      let waiter = self.state.withLock { state -> CheckedContinuation<Result<T, Failure>, Never>? in
        defer { state = .done(result) }
        if case .waiting(let continuation) = state { return continuation }
        return nil
      }
      waiter?.resume(returning: result)
    }
  }

  /// Waits for the work to end: its result or its error.
  ///
  /// Awaited once.
  package var value: T {
    get async throws(Failure) {
      let result = await withCheckedContinuation {
        (continuation: CheckedContinuation<Result<T, Failure>, Never>) in
        let done = state.withLock { state -> Result<T, Failure>? in
          if case .done(let result) = state { return result }
          state = .waiting(continuation)
          return nil
        }
        if let done { continuation.resume(returning: done) }
      }
      return try result.get()
    }
  }
}
