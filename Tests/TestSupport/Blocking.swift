import Dispatch

extension Products {
  /// ``run(_:_:environment:timeout:)`` on a Dispatch thread: waiting for a child process
  /// must not hold one of the few threads of Swift's cooperative pool, on which every
  /// running test's asynchronous code depends.
  package static func runAsync(
    _ name: String, _ arguments: [String], environment: [String: String] = [:],
    timeout: Int = 20
  ) async throws -> Result {
    try await offPool { try run(name, arguments, environment: environment, timeout: timeout) }
  }

  /// ``runCommand(_:_:environment:timeout:)`` on a Dispatch thread, as ``runAsync``.
  package static func runCommandAsync(
    _ command: String, _ arguments: [String], environment: [String: String] = [:],
    timeout: Int = 20
  ) async throws -> Result {
    try await offPool {
      try runCommand(command, arguments, environment: environment, timeout: timeout)
    }
  }
}

/// Runs blocking `body` on a Dispatch thread and waits for it without blocking the caller's.
package func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
  try await withCheckedThrowingContinuation { continuation in
    DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
  }
}
