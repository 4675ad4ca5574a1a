/// Waits until `condition` holds, checking it every `interval`, for at most `timeout`.
///
/// For a test that waits for something to happen (a delivery, a file, a process): it
/// returns as soon as it does, and a test's assertion afterwards says what did not. A
/// condition that costs a bus call or a process asks less often.
///
/// - Returns: Whether the condition held before the time ran out.
@discardableResult
package func waitUntil(
  timeout: Duration = .seconds(10), every interval: Duration = .milliseconds(5),
  _ condition: () async throws -> Bool
) async rethrows -> Bool {
  let deadline = ContinuousClock.now + timeout
  while true {
    if try await condition() { return true }
    if ContinuousClock.now >= deadline { return false }
    try? await Task.sleep(for: interval)
  }
}

/// How long a test waits for something that must not happen (a delivery that must not
/// arrive) before it checks that it did not.
///
/// A bounded settle is the only way to check an absence; everything that waits for
/// something to happen uses ``waitUntil(timeout:_:)`` instead.
package let settleTime: Duration = .milliseconds(150)

/// Waits ``settleTime``, for a check that something did not happen.
package func settle() async throws {
  try await Task.sleep(for: settleTime)
}
