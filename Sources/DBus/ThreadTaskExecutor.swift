/// A connection's thread as a task executor (``BusConnection/taskExecutor``).
///
/// Its own object, not the ``EventLoop`` that is the connection's serial executor, so that
/// the loop knows which role a job was given in: a job of a task that prefers the thread
/// runs there isolated to nothing. Run as the connection actor's job instead, nonisolated
/// code would have to leave that isolation at each of its executor hops (every return from
/// a nonisolated async function does one), each a further job and turn of the loop: a call
/// made there took six of them between its reply and the next call.
///
/// It holds the loop strongly: a task that prefers it owns it (or, in
/// `withTaskExecutorPreference`, its scope holds it), and may outlive the connection and
/// its thread, whose work then runs on the queue that takes over (see ``EventLoop/stop()``).
final class ThreadTaskExecutor: TaskExecutor {
  let loop: EventLoop

  init(_ loop: EventLoop) { self.loop = loop }

  func enqueue(_ job: consuming ExecutorJob) {
    loop.enqueue(UnownedJob(job), of: asUnownedTaskExecutor())
  }
}
