import Dispatch
package import Testing

/// Runs each test of a suite (or a single test) on threads of its own instead of the
/// Swift concurrency pool's.
///
/// For tests that block a thread for long, waiting for child processes that sync
/// (minutes on a slow disk). A test that blocks briefly awaits
/// `offThePool` instead: every test under the trait runs beside all the others rather than
/// taking turns on the pool, and on two CPUs more tests at once showed timing races.
///
/// On Linux the pool has as many threads as CPUs (two here) and never more. A test that
/// blocks one of them for a while holds up every other test's awaits meanwhile; on a
/// machine whose disk syncs slowly, tests waiting for processes that sync held both for
/// minutes, and 60 tests that never block, their own waits starved, ran past their time
/// limits (CI, and again with the test run's writes throttled to 100 per second).
///
/// With the trait, a test's task, and the child tasks it starts, prefer
/// ``ThreadPerJobExecutor``. Unstructured tasks (`Task {}`) and actors keep their own
/// executors.
package struct BlockingTrait: SuiteTrait, TestTrait, TestScoping {
  package var isRecursive: Bool { true }

  package func provideScope(
    for test: Test, testCase: Test.Case?,
    performing function: @concurrent @Sendable () async throws -> Void
  ) async throws {
    // A suite's scope holds its tests' scopes; each test gets its own.
    guard !test.isSuite else { return try await function() }
    try await withTaskExecutorPreference(ThreadPerJobExecutor.shared) { try await function() }
  }
}

extension Trait where Self == BlockingTrait {
  /// The tests block their threads: they run off the Swift concurrency pool
  /// (``BlockingTrait``).
  package static var blocking: Self { BlockingTrait() }
}

/// A task executor that runs each job on a serial Dispatch queue made for it.
///
/// Dispatch gives a serial queue with work a thread at once (it targets the overcommit
/// root queue), however many of its other threads are blocked, and reuses idle threads:
/// a job that blocks holds up nothing but itself. A task's jobs run one at a time anyway,
/// and tasks running side by side (a test's child tasks) get threads side by side.
package final class ThreadPerJobExecutor: TaskExecutor {
  package static let shared = ThreadPerJobExecutor()

  package func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    DispatchQueue(label: "notifybus.test.blocking").async {
      job.runSynchronously(on: self.asUnownedTaskExecutor())
    }
  }
}
