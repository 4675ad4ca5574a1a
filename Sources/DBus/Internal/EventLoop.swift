import CDBus
import Dispatch
import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// One dedicated thread that runs a connection's jobs and drives its libdbus I/O.
///
/// The thread loops: it runs the jobs and closures queued for it, dispatches the
/// messages libdbus has read, then waits in `poll(2)` on the descriptors libdbus asked
/// to watch, a pipe that other threads write to wake it, and a timeout for the
/// nearest libdbus timeout. It is the `SerialExecutor` of ``BusConnection``, so all code
/// isolated to a connection runs here and libdbus objects have one owner.
///
/// libdbus calls its watch, timeout and dispatch-status functions from inside libdbus
/// calls. Watches and timeouts change only through calls made on this thread (opening,
/// closing, pending calls); the toggle function does nothing, since the enabled state is
/// read before every poll. A `dbus_connection_send` from another thread may report a
/// dispatch-status change and calls the wakeup function, so those two are thread-safe.
final class EventLoop: SerialExecutor, @unchecked Sendable {
  // Safety of @unchecked Sendable: `queue` is the only state other threads touch, and a
  // Mutex guards it; `threadID` and `ended` are atomic. Every other stored property is read and
  // written only on the loop thread: the libdbus callbacks and `run()` are the only
  // users, and `preconditionInLoop()` checks the libdbus entry points.

  private enum Work: Sendable {
    /// A job of the actor this loop is the executor of.
    case job(UnownedJob)
    /// A job of a task that prefers the loop's thread (see ``ThreadTaskExecutor``).
    case taskJob(UnownedJob, UnownedTaskExecutor)
    case closure(@Sendable () -> Void)
  }

  private struct Queue {
    var work: [Work] = []
    var stopping = false
    /// Where work runs once the thread has ended (see ``stop()``).
    var afterEnd: DispatchQueue?
  }

  private let queue = Mutex(Queue())
  private let threadID = Atomic<UInt>(0)
  /// Whether the thread has ended and work runs on `Queue.afterEnd`.
  private let ended = Atomic<Bool>(false)
  /// Marks `Queue.afterEnd` with its loop, for ``inLoop``.
  private static let afterEndKey = DispatchSpecificKey<ObjectIdentifier>()
  /// Whether a thread has woken the loop to write since the loop last looked at what
  /// libdbus holds to send (see ``wakeToWrite()``).
  private let wokenToWrite = Atomic<Bool>(false)
  /// A non-blocking pipe: other threads write a byte to the write end to wake the loop.
  private let wakeDescriptor: CInt
  private let wakeWriteDescriptor: CInt

  /// The libdbus watches: descriptors to poll.
  ///
  /// Loop thread only.
  private var watches: [OpaquePointer] = []
  /// The libdbus timeouts with their next deadline.
  ///
  /// Loop thread only.
  private var timeouts: [(timeout: OpaquePointer, deadline: Int)] = []
  /// Connections whose dispatch status said data remains.
  ///
  /// libdbus may report a status change from a thread that sent a message, hence the
  /// mutex.
  private let connectionsToDispatch = Mutex<[DispatchTarget]>([])
  /// The connections being dispatched, swapped with ``connectionsToDispatch``'s array so
  /// that taking them allocates nothing.
  ///
  /// Loop thread only.
  private var connections: [DispatchTarget] = []
  /// What to run once the current pass of dispatching ends (see ``afterDispatch(_:)``).
  ///
  /// Loop thread only.
  private var afterDispatchWork: [() -> Void] = []
  /// The work being run, swapped with ``afterDispatchWork`` so that both keep their
  /// capacity and deferring work allocates nothing.
  ///
  /// Loop thread only.
  private var afterDispatchRunning: [() -> Void] = []

  /// Descriptors of others than libdbus that the loop polls for reading, each with what it
  /// runs on the loop's thread when the descriptor is readable (``watchReadable(_:_:)``).
  ///
  /// Loop thread only.
  private var readers: [(id: Int, descriptor: CInt, onReadable: () -> Void)] = []
  private var nextReaderID = 0

  /// The connections attached, with their sockets and whether they have authenticated
  /// (until then libdbus holds their messages on purpose, the socket writable all along).
  ///
  /// Loop thread only.
  private var attached: [(raw: OpaquePointer, socket: CInt, authenticated: Bool)] = []
  /// The sockets of the attached connections that have messages queued to send, found
  /// before each poll (see ``run()``).
  ///
  /// Loop thread only.
  private var socketsWithOutgoing: [CInt] = []

  /// Creates a loop and starts its thread.
  init() {
    var ends: [CInt] = [-1, -1]
    precondition(pipe(&ends) == 0, "pipe failed: \(Errno.current)")
    for fd in ends {
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
      _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }
    wakeDescriptor = ends[0]
    wakeWriteDescriptor = ends[1]
    let unmanaged = Unmanaged.passRetained(self)
    var thread = pthread_t()
    let result = pthread_create(
      &thread, nil,
      { context in
        let loop = Unmanaged<EventLoop>.fromOpaque(context!).takeRetainedValue()
        // Set by the thread itself, so that it is set before any of its work runs and
        // cleared (when the loop ends) after: a handle glibc gives a later thread again
        // must not make that thread this loop's.
        loop.threadID.store(UInt(pthread_self()), ordering: .releasing)
        loop.run()
        return nil
      }, unmanaged.toOpaque())
    precondition(result == 0, "pthread_create failed: \(Errno(rawValue: result))")
    pthread_detach(thread)
  }

  deinit {
    close(wakeDescriptor)
    close(wakeWriteDescriptor)
  }

  // MARK: - SerialExecutor

  func enqueue(_ job: consuming ExecutorJob) {
    submit(.job(UnownedJob(job)))
  }

  func asUnownedSerialExecutor() -> UnownedSerialExecutor {
    UnownedSerialExecutor(ordinary: self)
  }

  func checkIsolated() {
    precondition(inLoop, "not on the connection's event loop thread")
  }

  // No `isIsolatingCurrentContext()`: answering "isolated" for the whole thread would also
  // claim the connection's isolation for code that runs here without it (a task that
  // prefers the thread, a libdbus callback), and the runtime would then run the
  // connection's isolated deinit inline, inside that code, when it lets go of the last
  // reference (`ReleaseOnTheConnectionsThreadTests`). Without it the runtime trusts only
  // the jobs it runs as the connection's, and `checkIsolated()` serves `assumeIsolated`.

  /// Whether the calling thread is this loop's thread (or, once the thread has ended, the
  /// queue its work runs on).
  var inLoop: Bool {
    let id = threadID.load(ordering: .acquiring)
    if id != 0 && pthread_equal(pthread_t(id), pthread_self()) != 0 { return true }
    return ended.load(ordering: .acquiring)
      && DispatchQueue.getSpecific(key: Self.afterEndKey) == ObjectIdentifier(self)
  }

  func preconditionInLoop() {
    precondition(inLoop, "libdbus used off the connection's event loop thread")
  }

  /// Runs `body` on the loop thread, after the work already queued.
  func execute(_ body: @escaping @Sendable () -> Void) {
    submit(.closure(body))
  }

  /// Runs a job that `executor`, this loop's task executor, was given.
  ///
  /// The job is a task that prefers `executor` and keeps it alive (an unstructured task
  /// owns its preference; `withTaskExecutorPreference` holds it for its scope), so the
  /// unowned reference is valid when the job runs.
  func enqueue(_ job: UnownedJob, of executor: UnownedTaskExecutor) {
    submit(.taskJob(job, executor))
  }

  /// Runs `body` on the loop thread once the messages read so far are dispatched: right
  /// after the current pass when called from a message handler, so that a handler can
  /// gather what a burst of messages asks for and act on it once.
  ///
  /// From another thread, it runs after the work already queued.
  func afterDispatch(_ body: @escaping @Sendable () -> Void) {
    if inLoop {
      afterDispatchWork.append(body)
    } else {
      execute(body)
    }
  }

  /// Stops the loop after the work already queued; the thread then exits.
  ///
  /// Work queued after that (an actor-isolated method of a closed connection, a task
  /// resumed by a call's timeout) runs on a serial dispatch queue, one item at a time as
  /// before, so it still runs, and can say that the connection is closed, instead of
  /// waiting for a thread that is gone.
  func stop() {
    queue.withLock { $0.stopping = true }
    wake()
  }

  private func submit(_ work: Work) {
    let (wasEmpty, afterEnd) = queue.withLock { queue -> (Bool, DispatchQueue?) in
      if let afterEnd = queue.afterEnd { return (false, afterEnd) }
      queue.work.append(work)
      return (queue.work.count == 1, nil)
    }
    if let afterEnd {
      afterEnd.async { self.perform(work) }
      return
    }
    // The loop thread looks at the queue before every poll, so work it queues itself
    // (a task resumed by a reply, a job a handler started) needs no wakeup: that saves a
    // write and the read that drains it.
    if wasEmpty && !inLoop { wake() }
  }

  /// Wakes the loop so that it polls for writability: another thread's send left part
  /// of the outgoing queue unwritten.
  ///
  /// Under a flood every send may leave something queued (the socket is full, or the loop
  /// holds libdbus's I/O path while it reads or writes). One wakeup is enough until the
  /// loop next looks at what libdbus holds to send, which it then polls for writing (with
  /// the write watch enabled or not: a send that found the I/O path taken leaves it off);
  /// waking it on every such send instead costs a write, a read and a thread switch per
  /// message.
  ///
  /// The loop clears the flag before it looks, and sets it again when it is about to poll
  /// for writability anyway: a send that queued after the look either finds it clear and
  /// wakes the loop, or finds it set by a sender whose wakeup the loop has yet to consume
  /// or by the loop itself, which then wakes when the socket takes more and writes what is
  /// queued. Either way, the loop looks again after the last message queued.
  func wakeToWrite() {
    if !wokenToWrite.exchange(true, ordering: .sequentiallyConsistent) { wake() }
  }

  /// Wakes the loop thread from `poll`.
  func wake() {
    var byte: UInt8 = 1
    _ = write(wakeWriteDescriptor, &byte, 1)
  }

  // MARK: - The loop

  private func run() {
    var pollDescriptors: [pollfd] = []
    var polledWatches: [OpaquePointer] = []
    // Swapped with the queue's array each turn, so taking the work allocates nothing.
    var work: [Work] = []
    // Whether the last turn went on to its work without polling (see below).
    var skippedPoll = false
    while true {
      work.removeAll(keepingCapacity: true)
      let stopping = queue.withLock { queue in
        swap(&work, &queue.work)
        if queue.stopping && work.isEmpty {
          // Decided under the lock that queues work: whatever comes later goes there.
          let afterEnd = DispatchQueue(label: "notifybus.dbus.closed-connection")
          afterEnd.setSpecific(key: Self.afterEndKey, value: ObjectIdentifier(self))
          queue.afterEnd = afterEnd
          threadID.store(0, ordering: .releasing)
          ended.store(true, ordering: .releasing)
        }
        return queue.stopping
      }
      for item in work { perform(item) }
      if stopping && work.isEmpty { return }
      let dispatchedEverything = dispatchPending()

      let hasWork = !dispatchedEverything || queue.withLock { !$0.work.isEmpty }
      // Work the messages just dispatched queued (a task a reply resumed, a method
      // handler's task) runs before the next poll, which would find nothing yet: a
      // syscall saved per reply and per call served. Every other turn still polls, so a
      // stream of jobs cannot keep I/O waiting.
      if hasWork && !skippedPoll {
        skippedPoll = true
        continue
      }
      skippedPoll = false
      wokenToWrite.store(false, ordering: .sequentiallyConsistent)
      // A send from another thread that finds libdbus's I/O path taken only queues its
      // message: libdbus enables the write watch at the end of an I/O iteration, which that
      // send did not run, and not after handling a read watch. The loop takes the path for
      // a moment each time it handles one, so under a stream of incoming messages a
      // sender's call could sit queued, its write watch disabled, until the next send (a
      // call made on its own waited out its timeout: 1 in about 40,000 round trips beside a
      // signal flood). So the loop polls a connection for writing whenever libdbus holds
      // something to send, after clearing the flag: a send that queues after this check
      // finds the flag clear and wakes the loop, or set by a sender whose wakeup is still
      // to come or by this turn's own poll for writing.
      socketsWithOutgoing.removeAll(keepingCapacity: true)
      for index in attached.indices {
        let raw = attached[index].raw
        if !attached[index].authenticated {
          guard dbus_connection_get_is_authenticated(raw) != 0 else { continue }
          attached[index].authenticated = true
        }
        if dbus_connection_has_messages_to_send(raw) != 0 {
          socketsWithOutgoing.append(attached[index].socket)
        }
      }
      pollDescriptors.removeAll(keepingCapacity: true)
      polledWatches.removeAll(keepingCapacity: true)
      pollDescriptors.append(pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0))
      for watch in watches {
        let flags = dbus_watch_get_flags(watch)
        let enabled = dbus_watch_get_enabled(watch) != 0
        var events: Int16 = 0
        if enabled && flags & DBUS_WATCH_READABLE.rawValue != 0 { events |= Int16(POLLIN) }
        if flags & DBUS_WATCH_WRITABLE.rawValue != 0
          && (enabled || socketsWithOutgoing.contains(dbus_watch_get_unix_fd(watch)))
        {
          events |= Int16(POLLOUT)
        }
        guard events != 0 else { continue }
        pollDescriptors.append(
          pollfd(fd: dbus_watch_get_unix_fd(watch), events: events, revents: 0))
        polledWatches.append(watch)
        if events & Int16(POLLOUT) != 0 {
          wokenToWrite.store(true, ordering: .sequentiallyConsistent)
        }
      }
      let firstReader = pollDescriptors.count
      let polledReaders = readers
      for reader in polledReaders {
        pollDescriptors.append(pollfd(fd: reader.descriptor, events: Int16(POLLIN), revents: 0))
      }
      let now = MonotonicClock.now
      var timeoutMilliseconds: CInt = hasWork ? 0 : -1
      if !hasWork, var nearest = timeouts.first?.deadline {
        for entry in timeouts { nearest = min(nearest, entry.deadline) }
        timeoutMilliseconds = CInt(clamping: max(0, (nearest - now + 999_999) / 1_000_000))
      }
      let ready = poll(&pollDescriptors, nfds_t(pollDescriptors.count), timeoutMilliseconds)
      if ready < 0 && errno != EINTR {
        preconditionFailure("poll failed: \(Errno.current)")
      }
      if ready > 0 {
        if pollDescriptors[0].revents != 0 {
          var drain = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
          while read(wakeDescriptor, &drain, 32) == 32 {}
        }
        for (index, watch) in polledWatches.enumerated() {
          let revents = pollDescriptors[index + 1].revents
          guard revents != 0, watches.contains(watch) else { continue }
          var flags: UInt32 = 0
          if revents & Int16(POLLIN) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
          if revents & Int16(POLLOUT) != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
          if revents & Int16(POLLHUP) != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
          if revents & Int16(POLLERR | POLLNVAL) != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
          _ = dbus_watch_handle(watch, flags)
        }
        for (index, reader) in polledReaders.enumerated()
        where pollDescriptors[firstReader + index].revents != 0 {
          // A handler run before may have stopped this watch.
          guard readers.contains(where: { $0.id == reader.id }) else { continue }
          reader.onReadable()
        }
      }
      fireTimeouts()
    }
  }

  /// Polls `descriptor` for reading beside the connection's, running `onReadable` on the
  /// loop's thread each time it is readable, until ``stopWatching(_:)``: a descriptor that
  /// stays readable runs it on every turn, so it must read what is there.
  ///
  /// Loop thread only.
  ///
  /// - Returns: The watch, for ``stopWatching(_:)``.
  func watchReadable(_ descriptor: CInt, _ onReadable: @escaping () -> Void) -> Int {
    preconditionInLoop()
    nextReaderID += 1
    readers.append((nextReaderID, descriptor, onReadable))
    return nextReaderID
  }

  /// Stops polling for a watch of ``watchReadable(_:_:)``; its handler never runs again.
  ///
  /// Loop thread only.
  func stopWatching(_ watch: Int) {
    preconditionInLoop()
    readers.removeAll { $0.id == watch }
  }

  private func perform(_ work: Work) {
    switch work {
    case .job(let job): job.runSynchronously(on: asUnownedSerialExecutor())
    // Isolated to nothing: nonisolated code then runs on without a hop back to the loop.
    case .taskJob(let job, let executor): job.runSynchronously(on: executor)
    case .closure(let body): body()
    }
  }

  /// Dispatches queued messages, a bounded number per connection so that jobs and I/O
  /// keep their turn under a flood.
  ///
  /// - Returns: Whether every connection's queue is now empty.
  private func dispatchPending() -> Bool {
    connections.removeAll(keepingCapacity: true)
    connectionsToDispatch.withLock { swap(&connections, &$0) }
    guard !connections.isEmpty else {
      runAfterDispatchWork()
      return true
    }
    for connection in connections {
      // A handler may close the connection (a deinit that runs on this thread does);
      // the reference keeps the pointer valid until this pass is done with it.
      dbus_connection_ref(connection.raw)
      defer { dbus_connection_unref(connection.raw) }
      var budget = 512
      while budget > 0 && dbus_connection_dispatch(connection.raw) == DBUS_DISPATCH_DATA_REMAINS {
        budget -= 1
      }
      if budget == 0 && dbus_connection_get_is_connected(connection.raw) != 0 {
        markForDispatch(connection.raw)
      }
    }
    runAfterDispatchWork()
    return connectionsToDispatch.withLock { $0.isEmpty }
  }

  private func runAfterDispatchWork() {
    // What runs may queue more; that runs too, before the loop polls again.
    while !afterDispatchWork.isEmpty {
      swap(&afterDispatchRunning, &afterDispatchWork)
      for body in afterDispatchRunning { body() }
      afterDispatchRunning.removeAll(keepingCapacity: true)
    }
  }

  private func fireTimeouts() {
    guard !timeouts.isEmpty else { return }
    let now = MonotonicClock.now
    // Usually nothing is due (a pending call's timeout is seconds away): find that out
    // without building the list.
    guard timeouts.contains(where: { $0.deadline <= now }) else { return }
    let due = timeouts.filter { $0.deadline <= now }.map(\.timeout)
    for timeout in due {
      guard let index = timeouts.firstIndex(where: { $0.timeout == timeout }) else { continue }
      timeouts[index].deadline = now + Int(dbus_timeout_get_interval(timeout)) * 1_000_000
      _ = dbus_timeout_handle(timeout)
    }
  }

  // MARK: - libdbus integration

  /// Installs this loop's watch, timeout, dispatch-status and wakeup functions on a connection.
  ///
  /// Call on the loop thread, right after opening the connection.
  func attach(_ connection: OpaquePointer) {
    preconditionInLoop()
    let me = Unmanaged.passUnretained(self).toOpaque()
    dbus_connection_set_watch_functions(
      connection,
      { watch, data in
        EventLoop.from(data).watches.append(watch!)
        return 1
      },
      { watch, data in EventLoop.from(data).watches.removeAll { $0 == watch } },
      { _, _ in },  // enabled state is read before every poll
      me, nil)
    dbus_connection_set_timeout_functions(
      connection,
      { timeout, data in
        EventLoop.from(data).addTimeout(timeout!)
        return 1
      },
      { timeout, data in EventLoop.from(data).timeouts.removeAll { $0.timeout == timeout } },
      { timeout, data in
        let loop = EventLoop.from(data)
        loop.timeouts.removeAll { $0.timeout == timeout }
        loop.addTimeout(timeout!)
      },
      me, nil)
    dbus_connection_set_dispatch_status_function(
      connection,
      { connection, status, data in
        guard status == DBUS_DISPATCH_DATA_REMAINS, let connection else { return }
        let loop = EventLoop.from(data)
        loop.markForDispatch(connection)
        if !loop.inLoop { loop.wake() }
      }, me, nil)
    // libdbus asks for a wakeup each time a message is queued. On this thread the next
    // poll sees the writable watch anyway; other threads only send, and
    // `BusConnection.send` wakes the loop itself when libdbus could not write everything
    // at once, which spares a thread switch per message.
    dbus_connection_set_wakeup_main_function(
      connection, { _ in }, me, nil)
    if dbus_connection_get_dispatch_status(connection) == DBUS_DISPATCH_DATA_REMAINS {
      markForDispatch(connection)
    }
    // Known once the connection is open (the socket transport's): -1, matching no watch,
    // would only leave the write watch's enabled state to decide, as libdbus sets it.
    var socket: CInt = -1
    _ = dbus_connection_get_unix_fd(connection, &socket)
    attached.append((connection, socket, false))
  }

  private func markForDispatch(_ connection: OpaquePointer) {
    connectionsToDispatch.withLock { pending in
      if !pending.contains(where: { $0.raw == connection }) {
        pending.append(DispatchTarget(raw: connection))
      }
    }
  }

  /// Forgets a connection that has been closed.
  func detach(_ connection: OpaquePointer) {
    preconditionInLoop()
    dbus_connection_set_dispatch_status_function(connection, nil, nil, nil)
    dbus_connection_set_wakeup_main_function(connection, nil, nil, nil)
    dbus_connection_set_watch_functions(connection, nil, nil, nil, nil, nil)
    dbus_connection_set_timeout_functions(connection, nil, nil, nil, nil, nil)
    connectionsToDispatch.withLock { $0.removeAll { $0.raw == connection } }
    attached.removeAll { $0.raw == connection }
  }

  private func addTimeout(_ timeout: OpaquePointer) {
    guard dbus_timeout_get_enabled(timeout) != 0 else { return }
    let interval = Int(dbus_timeout_get_interval(timeout)) * 1_000_000
    timeouts.append((timeout, MonotonicClock.now + interval))
  }

  /// A connection with messages to dispatch.
  ///
  /// Safety of @unchecked Sendable: only the pointer's identity crosses threads; the loop
  /// thread alone dispatches, and `detach` removes it before the connection is freed.
  private struct DispatchTarget: @unchecked Sendable {
    let raw: OpaquePointer
  }

  private static func from(_ data: UnsafeMutableRawPointer?) -> EventLoop {
    Unmanaged<EventLoop>.fromOpaque(data!).takeUnretainedValue()
  }
}
