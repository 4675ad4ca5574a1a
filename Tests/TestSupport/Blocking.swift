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

extension Products {
  /// ``run(_:_:environment:timeout:)`` off the pool (``offThePool(_:)``).
  package static func runAsync(
    _ name: String, _ arguments: [String], environment: [String: String] = [:],
    timeout: Int = 20
  ) async throws -> Result {
    try await offThePool { try run(name, arguments, environment: environment, timeout: timeout) }
  }

  /// ``runCommand(_:_:environment:timeout:)`` off the pool (``offThePool(_:)``).
  package static func runCommandAsync(
    _ command: String, _ arguments: [String], environment: [String: String] = [:],
    timeout: Int = 20
  ) async throws -> Result {
    try await offThePool {
      try runCommand(command, arguments, environment: environment, timeout: timeout)
    }
  }
}
