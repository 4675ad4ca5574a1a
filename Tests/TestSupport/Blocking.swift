import Dispatch

/// Runs blocking work (waiting for a process, reading its output) on a Dispatch thread,
/// so that it does not hold one of the Swift concurrency pool's few threads, which every
/// test running at the same time needs.
package func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws
  -> T
{
  try await withCheckedThrowingContinuation { continuation in
    DispatchQueue.global().async { continuation.resume(with: Result { try work() }) }
  }
}
