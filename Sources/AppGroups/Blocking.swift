import Dispatch

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
