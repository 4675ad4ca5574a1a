import CDBus
import Dispatch
import Synchronization
import SystemSupport

/// A private connection to a message bus, owned by one dedicated thread.
///
/// ```swift
/// let connection = try await BusConnection.connect()           // Bus.automatic
/// let rule = MatchRule.signal(interface: "org.example.Chat", member: "Said")
/// for await signal in try await connection.signals(matching: rule) {
///   print(signal.body)
/// }
/// ```
///
/// The connection is an actor whose executor is its own event-loop thread: every libdbus
/// call happens there, driven by libdbus's watch, timeout, dispatch-status and wakeup
/// functions, and no libdbus pointer leaves it. ``send(_:)`` may be called from any
/// thread without waiting: it builds the message on the caller's thread and hands it to
/// the loop, which writes it out promptly. Method calls, `AddMatch` and `RemoveMatch` are
/// asynchronous pending calls; nothing on this path blocks or flushes.
///
/// A lost bus is routine: the connection reconnects with backoff (25 ms doubling to 250 ms)
/// to the bus it chose when it first connected (the same address, or the embedded bus,
/// started again; never the next bus ``Bus/automatic`` would try), adds every match rule
/// again, requests its names again and reports each step through ``state`` and
/// ``stateChanges()``. Messages sent while reconnecting wait in the queue
/// and go out once connected; signals broadcast by others meanwhile are lost, since
/// D-Bus has no replay. Releasing the last reference ends the connection at any point,
/// reconnecting included.
public actor BusConnection {
  /// Where a connection is in its life.
  public enum State: Hashable, Sendable {
    /// Connecting for the first time.
    case connecting
    /// Connected, with the unique name the bus gave this connection.
    case connected(uniqueName: BusName)
    /// The bus went away; reconnection attempt `attempt` is under way.
    case reconnecting(attempt: Int)
    /// Closed by ``close()``, or the first connection failed.
    case closed
  }

  /// The bus this connection was asked for.
  public nonisolated let bus: Bus
  let loop: EventLoop

  /// The connection's executor: its event-loop thread.
  public nonisolated var unownedExecutor: UnownedSerialExecutor {
    loop.asUnownedSerialExecutor()
  }

  /// The connection's thread as a task executor.
  ///
  /// Nonisolated asynchronous code run with this preference
  /// (`Task(executorPreference:)`, `withTaskExecutorPreference(_:operation:)`) runs on the
  /// connection's thread, where the connection reads its replies: a ``call(_:timeout:)``
  /// made there is written from that thread and resumed there by its reply, without a
  /// switch to another thread, as a C client waits for a reply on its connection's
  /// thread. Such code shares the thread with every handler of the connection: it must
  /// not block.
  public nonisolated var taskExecutor: any TaskExecutor { threadExecutor }
  nonisolated let threadExecutor: ThreadTaskExecutor

  /// The libdbus connection; `nil` while reconnecting and after closing.
  var raw: OpaquePointer?
  /// What `raw`'s message filter reaches this connection through.
  private var filterTarget: FilterTarget?
  /// The current state.
  public private(set) var state: State = .connecting
  /// The address the connection reached.
  public private(set) var address: BusAddress?
  /// The bus the first connection reached, which every reconnection goes back to (an
  /// address of `nil` is the embedded bus, started again when it is not running).
  private var chosen: Bus.Candidate?
  var isClosed = false
  var nextIdentifier: UInt64 = 1
  var stateObservers: [UInt64: @Sendable (State) -> Void] = [:]
  var pendingReplies: [ObjectIdentifier: ReplyBox] = [:]
  /// The calls made while connected, waiting for their replies (see ``call(_:timeout:)``).
  nonisolated let replyWaiters = ReplyWaiters()
  /// Set by ``close()``: calls then fail at once, without waiting for the loop, which ends.
  nonisolated let closed = Atomic<Bool>(false)
  private var reconnectTask: Task<Void, Never>?

  // Signal routing (see BusConnection+Signals.swift).
  var rules: [String: RuleEntry] = [:]
  var subscribers: [UInt64: Subscriber] = [:]
  var subscribersByInterface: [InterfaceName: InlineList<UInt64>] = [:]
  var subscribersWithoutInterface: [UInt64] = []
  /// The rule sets in use, in the order they were first used: the order they see a signal.
  var ruleSets: [RuleSetState] = []
  /// The long strings of recent messages, reused while decoding the next ones.
  var decodedStrings = StringCache(capacity: 16)
  /// The storage of the last received signal's or method call's arguments, for the next
  /// (see ``deliverSignal(_:)`` and ``handle(_:)``).
  var receivedArguments: [DBusValue] = []

  // Exported objects and owned names (see BusConnection+Objects.swift, +Names.swift).
  var objects: [ObjectPath: ExportedObject] = [:]
  /// Per caller, the last method call being handled, which the next one waits for.
  var callChains: [BusName: (id: UInt64, task: Task<Void, Never>)] = [:]
  var ownedNames: [BusName: RequestNameFlags] = [:]

  /// The path from ``send(_:)`` to libdbus: the connection, while connected, and the
  /// messages waiting for it.
  private nonisolated let outgoing = Mutex(Outgoing())
  /// The most messages ``send(_:)`` queues before it refuses more.
  public nonisolated static let maximumQueuedMessages = 100_000

  private init(bus: Bus) {
    self.bus = bus
    self.loop = EventLoop()
    self.threadExecutor = ThreadTaskExecutor(loop)
  }

  /// Connects to a bus and registers with it.
  ///
  /// - Parameter bus: Which bus; ``Bus/automatic`` by default.
  /// - Returns: A connected connection.
  /// - Throws: ``DBusError`` when no bus can be reached (name
  ///   ``DBusError/Name/noServer`` or the name libdbus gives), the address is malformed
  ///   (``DBusError/Name/badAddress``), or the embedded bus cannot start.
  public static func connect(to bus: Bus = .automatic) async throws(DBusError) -> BusConnection {
    let connection = BusConnection(bus: bus)
    do {
      try await connection.open()
    } catch {
      await connection.close()
      throw error
    }
    return connection
  }

  /// The unique name the bus gave this connection, while connected.
  public var uniqueName: BusName? {
    if case .connected(let name) = state { return name }
    return nil
  }

  // MARK: - Opening and reconnecting

  /// Connects to the first bus of ``bus``'s candidates that answers or, once one has, to
  /// that one again: a connection whose session bus restarts must not move to the
  /// embedded bus (or to a `NOTIFYBUS_BUS_ADDRESS` set since), away from its peers.
  private func open() async throws(DBusError) {
    var lastError = DBusError(.noServer, "no bus to try")
    let candidates = if let chosen { [chosen] } else { try bus.candidates() }
    for candidate in candidates {
      // close() may come while a reconnection waits for its Hello: no further bus, and
      // above all no embedded bus started for a connection that is closed.
      guard !isClosed else { throw DBusError(.disconnected, "the connection to the bus is closed") }
      do throws(DBusError) {
        if let address = candidate.address {
          try await openConnection(to: address)
        } else {
          try await openConnection(to: EmbeddedBus.start())
        }
        if chosen == nil {
          chosen = candidate
          chosen?.fallsThrough = false
          if bus == .embedded { chosen?.address = nil }
        }
        return
      } catch {
        lastError = error
        if !candidate.fallsThrough { throw error }
      }
    }
    throw lastError
  }

  private func openConnection(to address: BusAddress) async throws(DBusError) {
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    guard let connection = dbus_connection_open_private(address.rawValue, &error) else {
      throw DBusError(error, "cannot connect to \(address)")
    }
    dbus_connection_set_exit_on_disconnect(connection, 0)
    loop.attach(connection)
    // libdbus owns the target until the filter is removed; the target holds this
    // connection weakly (see FilterTarget).
    let target = FilterTarget(self)
    dbus_connection_add_filter(
      connection, messageFilter, Unmanaged.passRetained(target).toOpaque(),
      { Unmanaged<FilterTarget>.fromOpaque($0!).release() })
    filterTarget = target
    raw = connection
    self.address = address
    let hello = Message.methodCall(
      destination: .bus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
      member: "Hello")
    let reply: Message
    do {
      reply = try await call(hello)
    } catch {
      discardConnection()
      throw error
    }
    guard !isClosed else {
      discardConnection()
      throw DBusError(.disconnected, "the connection to the bus is closed")
    }
    guard case .string(let name)? = reply.body.first, let uniqueName = try? BusName(name) else {
      discardConnection()
      throw DBusError(.failed, "the bus answered Hello without a unique name")
    }
    dbus_bus_set_unique_name(connection, name)
    // A reconnection adds every match rule again before anything else goes out, so that a
    // message sent from another thread once connected meets the rules back on the bus,
    // which handles a connection's messages in order: notifyd's bridge confirms a post by
    // its own copy coming back through its rule.
    if case .reconnecting = state {
      for rule in Array(rules.keys) + ruleSetTexts {
        var message = busMethod("AddMatch", [.string(rule)])
        message.noReplyExpected = true
        let built = try MessageCoding.makeRaw(message)
        dbus_connection_send(connection, built, nil)
        dbus_message_unref(built)
      }
    }
    setState(.connected(uniqueName: uniqueName))
    flushOutgoing()
  }

  /// Closes and releases the libdbus connection, completing its pending calls with an
  /// error.
  func discardConnection() {
    guard let connection = raw else { return }
    raw = nil
    outgoing.withLock { $0.target = nil }
    if let filterTarget {
      dbus_connection_remove_filter(
        connection, messageFilter, Unmanaged.passUnretained(filterTarget).toOpaque())
      self.filterTarget = nil
    }
    dbus_connection_close(connection)
    loop.detach(connection)
    dbus_connection_unref(connection)
    let lost = pendingReplies.values
    pendingReplies.removeAll()
    for box in lost {
      box.complete(.failure(DBusError(.disconnected, "the connection to the bus was lost")))
    }
    // Calls register only while `outgoing` has a target, which is gone: none comes after.
    for awaited in replyWaiters.takeAll() {
      awaited.complete(.failure(DBusError(.disconnected, "the connection to the bus was lost")))
    }
  }

  /// Called once libdbus reports `Disconnected`.
  func connectionLost() {
    discardConnection()
    guard !isClosed, reconnectTask == nil else { return }
    setState(.reconnecting(attempt: 1))
    // The task holds the connection only while an attempt runs, not while it waits
    // between attempts, so a connection released while its bus is gone still ends. It
    // runs on the connection's thread, as the attempts do, so a busy concurrency pool
    // does not delay it.
    reconnectTask = Task(executorPreference: threadExecutor) { [weak self] in
      var delay = Duration.milliseconds(25)
      var attempt = 1
      while await self?.reconnect(attempt: attempt) == false {
        try? await Task.sleep(for: delay)
        // A local socket is cheap to try; a short cap brings the connection back soon
        // after the bus does.
        delay = min(delay * 2, .milliseconds(250))
        attempt += 1
      }
    }
  }

  /// One reconnection attempt: whether it is over (connected, or closed meanwhile).
  private func reconnect(attempt: Int) async -> Bool {
    guard !isClosed else { return true }
    if attempt > 1 { setState(.reconnecting(attempt: attempt)) }
    do {
      try await open()
      try await restoreRegistrations()
      reconnectTask = nil
      return true
    } catch {
      discardConnection()
      return isClosed
    }
  }

  /// Confirms the match rules are back and requests every owned name again.
  ///
  /// The rules went out as the connection came back (``openConnection(to:)``), without
  /// waiting for each reply; one round trip confirms the bus has processed them all, since
  /// it handles a connection's messages in order.
  private func restoreRegistrations() async throws(DBusError) {
    _ = try await call(busMethod("GetId"))
    for (name, flags) in ownedNames {
      _ = try await requestName(name, flags: flags)
    }
  }

  /// Closes the connection: pending calls fail with ``DBusError/Name/disconnected``, signal streams
  /// finish, and the event-loop thread ends.
  ///
  /// Idempotent. The connection still answers afterwards, from a dispatch queue that takes
  /// over from the thread: what needs the bus (calls, ``send(_:)``, subscriptions, names)
  /// fails with ``DBusError/Name/disconnected``; the rest returns (``state`` is
  /// ``State/closed``, ``export(at:interface:introspectionXML:handler:)`` serves nothing).
  public func close() {
    guard !isClosed else { return }
    isClosed = true
    closed.store(true, ordering: .releasing)
    reconnectTask?.cancel()
    discardConnection()
    for subscriber in subscribers.values { subscriber.finish?() }
    subscribers.removeAll()
    rules.removeAll()
    ruleSets.removeAll()
    outgoing.withLock { $0.discardAll() }
    setState(.closed)
    stateObservers.removeAll()
    loop.stop()
  }

  isolated deinit {
    if !isClosed { close() }
  }

  // MARK: - State

  func setState(_ newState: State) {
    guard newState != state else { return }
    state = newState
    for observer in stateObservers.values { observer(newState) }
  }

  /// Calls `observer` on the connection's thread each time the state changes, until the
  /// returned token is passed to ``removeStateObserver(_:)``.
  ///
  /// The observer must not block: it runs on the connection's event loop.
  public func addStateObserver(_ observer: @escaping @Sendable (State) -> Void) -> UInt64 {
    let id = nextIdentifier
    nextIdentifier += 1
    stateObservers[id] = observer
    return id
  }

  /// Stops calling an observer added with ``addStateObserver(_:)``.
  public func removeStateObserver(_ id: UInt64) {
    stateObservers[id] = nil
  }

  /// The state, then every change of it, until the connection closes.
  public func stateChanges() -> AsyncStream<State> {
    let (stream, continuation) = AsyncStream.makeStream(of: State.self)
    continuation.yield(state)
    if state == .closed {
      continuation.finish()
      return stream
    }
    let id = addStateObserver { state in
      continuation.yield(state)
      if state == .closed { continuation.finish() }
    }
    continuation.onTermination = { [weak self] _ in
      Task { await self?.removeStateObserver(id) }
    }
    return stream
  }

  // MARK: - Sending

  /// Sends a message without waiting: a signal, a reply, or a method call whose reply
  /// is not wanted.
  ///
  /// Callable from any thread. The message is built and checked on the caller's thread
  /// and written by the connection's thread in the order `send` was called. While the
  /// connection is reconnecting, messages wait in the queue.
  ///
  /// - Throws: ``DBusError`` when the message is malformed, the connection is closed, or
  ///   more than ``maximumQueuedMessages`` are waiting (``DBusError/Name/limitsExceeded``).
  public nonisolated func send(_ message: Message) throws(DBusError) {
    try send(OutgoingMessage(raw: try MessageCoding.makeRaw(message)))
  }

  /// Sends a message already built, as ``send(_:)`` does; it takes the reference, and
  /// releases it when the message cannot be sent.
  nonisolated func send(_ built: OutgoingMessage) throws(DBusError) {
    let result = outgoing.withLock { $0.send(built) }
    switch result {
    case .sent(let complete):
      // libdbus wrote what it could; when part of it is still queued (the loop holds the
      // I/O path, or the socket is full) the loop must poll for writability.
      if !complete { loop.wakeToWrite() }
    case .queued(let first):
      if loop.inLoop {
        assumeIsolated { $0.flushOutgoing() }
      } else if first {
        loop.execute { [weak self] in self?.assumeIsolated { $0.flushOutgoing() } }
      }
    case .full:
      dbus_message_unref(built.raw)
      throw DBusError(
        .limitsExceeded,
        "\(Self.maximumQueuedMessages) messages are already waiting to be sent")
    case .closed:
      dbus_message_unref(built.raw)
      throw DBusError(.disconnected, "the connection is closed")
    }
  }

  /// Sends a message only if the connection is up at this moment: it is never queued for
  /// a reconnection.
  ///
  /// For a sender that must know the bus has the message before it answers someone
  /// (notifyd acknowledges a post from an MQTT broker only then). When this returns,
  /// libdbus has the message on a connection that it still counted as connected, and
  /// nothing sent earlier was waiting; a bus that dies at that very moment can still
  /// lose it, which only a round trip afterwards (``flush()``) rules out.
  ///
  /// Callable from any thread.
  ///
  /// - Throws: ``DBusError`` ``DBusError/Name/disconnected`` when the connection is not
  ///   connected (nothing is sent or kept), or when the message is malformed.
  public nonisolated func sendIfConnected(_ message: Message) throws(DBusError) {
    let built = OutgoingMessage(raw: try MessageCoding.makeRaw(message))
    guard let complete = outgoing.withLock({ $0.sendIfConnected(built) }) else {
      dbus_message_unref(built.raw)
      throw DBusError(.disconnected, "the connection to the bus is not connected")
    }
    if !complete { loop.wakeToWrite() }
  }

  /// Hands the queued messages to libdbus once connected, and lets later sends go
  /// straight to it.
  func flushOutgoing() {
    guard let raw, case .connected = state else { return }
    outgoing.withLock { $0.connect(SharedConnection(raw: raw)) }
  }

  /// Waits until the bus has received and routed everything sent before, by a round
  /// trip to the bus (`org.freedesktop.DBus.Peer.Ping`).
  ///
  /// It does not mean the recipients have read their messages.
  ///
  /// Nonisolated, as ``call(_:timeout:)``: the Ping is written from the caller's thread,
  /// with no hop to the connection's thread before it (a write and a read of its wake pipe
  /// and one more wakeup of that thread, per call, when the caller is elsewhere).
  public nonisolated func flush() async throws(DBusError) {
    _ = try await startFlush().reply(cancellable: true)
  }

  /// Writes the round trip of ``flush()`` now, from the caller's thread, without waiting
  /// for its answer: ``PendingCall/reply()`` waits for it.
  package nonisolated func startFlush() throws(DBusError) -> PendingCall {
    try startCall(
      .methodCall(
        destination: .bus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus.Peer",
        member: "Ping"))
  }

  // MARK: - Other descriptors

  /// Polls `descriptor` for reading on the connection's thread, beside the bus, and runs
  /// `onReadable` there each time it is readable, until ``stopWatching(_:)``: so that what
  /// it wakes (a task on ``taskExecutor``) runs without a wakeup of another thread.
  ///
  /// `onReadable` must read what is there (a descriptor left readable runs it again on
  /// every turn of the loop), must not block, and must not close `descriptor` before
  /// ``stopWatching(_:)``. The handoff's importer watches its spool's inotify descriptor
  /// this way.
  ///
  /// - Returns: The watch, for ``stopWatching(_:)``.
  package func watchReadable(_ descriptor: CInt, _ onReadable: @escaping @Sendable () -> Void)
    -> Int
  {
    loop.watchReadable(descriptor, onReadable)
  }

  /// Stops a watch of ``watchReadable(_:_:)``: its handler never runs after this returns.
  package func stopWatching(_ watch: Int) {
    loop.stopWatching(watch)
  }

  // MARK: - Method calls

  /// Calls a method and waits for its reply.
  ///
  /// Messages passed to ``send(_:)`` before this call go out before it.
  ///
  /// Callable from any thread, the connection's own included. While connected, the call
  /// is written on the caller's thread and its reply resumes the caller from the
  /// connection's thread: the caller waits for the bus and the peer, not for a turn of
  /// the connection's loop. While connecting or reconnecting, it goes through the loop,
  /// which says why it cannot be made.
  ///
  /// - Parameters:
  ///   - message: A method call.
  ///   - timeout: How long to wait for the reply.
  /// - Returns: The method's reply.
  /// - Throws: ``DBusError``: the error the peer replied with, ``DBusError/Name/noReply``
  ///   when the timeout passes or the calling task is cancelled first,
  ///   ``DBusError/Name/disconnected`` when the connection is lost first.
  public nonisolated func call(_ message: Message, timeout: Duration = .seconds(25))
    async throws(DBusError) -> Message
  {
    try await startCall(message, timeout: timeout).reply(cancellable: true)
  }

  /// Writes a method call now, from the caller's thread, without waiting for its reply.
  ///
  /// ``PendingCall/reply()`` waits for it later. Messages passed to ``send(_:)`` before go
  /// out before it.
  ///
  /// For a caller that has something else to wait for meanwhile: the handoff's sender
  /// writes the round trip that tells its doorbell was routed right after the doorbell,
  /// and waits for the share's flush before it waits for the answer. While connecting or
  /// reconnecting, the call is made through the loop when its reply is awaited, as
  /// ``call(_:timeout:)`` makes it.
  ///
  /// - Throws: ``DBusError``: `message` is not a method call, cannot be built, or the
  ///   connection is closed.
  package nonisolated func startCall(_ message: Message, timeout: Duration = .seconds(25))
    throws(DBusError) -> PendingCall
  {
    guard message.kind == .methodCall else {
      throw DBusError(.invalidArgs, "only a method call has a reply to wait for")
    }
    let built = try MessageCoding.makeRaw(message)
    let awaited = AwaitedReply()
    let nanoseconds =
      timeout.components.seconds.multipliedReportingOverflow(by: 1_000_000_000).overflow
      ? Int.max / 2
      : Int(timeout.components.seconds) * 1_000_000_000
        + Int(timeout.components.attoseconds / 1_000_000_000)
    guard let serial = sendAwaitingReply(built, awaited, within: max(1_000_000, nanoseconds))
    else {
      dbus_message_unref(built)
      if closed.load(ordering: .acquiring) {
        throw DBusError(.disconnected, "the connection to the bus is closed")
      }
      return PendingCall(connection: self, state: .notSent(message, timeout: timeout))
    }
    return PendingCall(connection: self, state: .sent(awaited, serial: serial))
  }

  /// Waits for the reply `awaited` of call `serial`; a cancellation of the waiting task
  /// ends the call with ``DBusError/Name/noReply`` when `cancellable`, and is ignored
  /// otherwise.
  nonisolated func reply(
    _ awaited: AwaitedReply, serial: UInt32, cancellable: Bool
  ) async throws(DBusError) -> Message {
    try await awaited.result(resumedOn: threadExecutor) {
      guard cancellable else { return }
      replyWaiters.take(serial)?.complete(
        .failure(DBusError(.noReply, "the call was cancelled before its reply arrived")))
    }.get()
  }

  /// Writes a method call from the caller's thread and registers the call for its reply,
  /// when connected; the call's serial, or `nil` when not connected.
  private nonisolated func sendAwaitingReply(
    _ built: OpaquePointer, _ awaited: AwaitedReply, within nanoseconds: Int
  ) -> UInt32? {
    let deadline = MonotonicClock.now + nanoseconds
    let sent = outgoing.withLock { outgoing -> (serial: UInt32, complete: Bool)? in
      // A target is set only once what waited for the connection went out, so nothing
      // sent before is still queued.
      guard let target = outgoing.target, outgoing.queue.isEmpty else { return nil }
      var serial: UInt32 = 0
      guard dbus_connection_send(target.raw, built, &serial) != 0 else { return nil }
      // Registered under the lock the send took, which the loop takes to look a reply
      // up: however fast the reply comes, it finds the call.
      replyWaiters.add(awaited, serial: serial, deadline: deadline)
      return (serial, dbus_connection_has_messages_to_send(target.raw) == 0)
    }
    guard let sent else { return nil }
    dbus_message_unref(built)
    if !sent.complete { loop.wakeToWrite() }
    return sent.serial
  }

  /// ``call(_:timeout:)`` through libdbus's pending calls on the loop: the path while
  /// not connected (`Hello` itself, and calls made while reconnecting, which fail).
  func callOnLoop(_ message: Message, timeout: Duration) async throws(DBusError) -> Message {
    flushOutgoing()
    guard let raw else {
      throw DBusError(.disconnected, "the connection to the bus is \(isClosed ? "closed" : "down")")
    }
    let built = try MessageCoding.makeRaw(message)
    defer { dbus_message_unref(built) }
    var pending: OpaquePointer?
    let milliseconds = CInt(
      clamping: timeout.components.seconds * 1000
        + timeout.components.attoseconds / 1_000_000_000_000_000)
    guard dbus_connection_send_with_reply(raw, built, &pending, max(1, milliseconds)) != 0,
      let pending
    else {
      throw DBusError(.disconnected, "the connection to the bus is down")
    }
    defer { dbus_pending_call_unref(pending) }
    let box = ReplyBox()
    pendingReplies[ObjectIdentifier(box)] = box
    let result = await withCheckedContinuation { continuation in
      box.continuation = continuation
      dbus_pending_call_set_notify(
        pending, pendingCallCompleted, Unmanaged.passRetained(box).toOpaque(),
        { Unmanaged<ReplyBox>.fromOpaque($0!).release() })
    }
    pendingReplies[ObjectIdentifier(box)] = nil
    return try result.get()
  }

  /// Completes the call a received reply answers, on the loop thread: whether one was
  /// waiting.
  func completeCall(_ message: OpaquePointer) -> Bool {
    let serial = dbus_message_get_reply_serial(message)
    // Taken under the lock a call is sent and registered under: a reply that arrives
    // before its call is registered waits for it.
    guard let awaited = outgoing.withLock({ _ in replyWaiters.take(serial) }) else {
      return false
    }
    let reply = MessageCoding.decode(message, strings: &decodedStrings)
    awaited.complete(reply.error.map { .failure($0) } ?? .success(reply))
    return true
  }

  /// A method call to the bus itself.
  func busMethod(_ member: MemberName, _ body: [DBusValue] = []) -> Message {
    .methodCall(
      destination: .bus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
      member: member, body: body)
  }

  // MARK: - Receiving

  /// Handles one message libdbus dispatches, on the loop thread.
  func handle(_ message: OpaquePointer) -> DBusHandlerResult {
    switch dbus_message_get_type(message) {
    case DBUS_MESSAGE_TYPE_SIGNAL:
      if dbus_message_is_signal(message, DBUS_INTERFACE_LOCAL, "Disconnected") != 0 {
        // Tear down after libdbus has finished dispatching this message. Nothing started
        // from a libdbus callback holds the connection strongly: it could outlive an
        // isolated deinit that is already queued on the loop.
        loop.execute { [weak self] in self?.assumeIsolated { $0.connectionLost() } }
        return DBUS_HANDLER_RESULT_HANDLED
      }
      deliverSignal(message)
      return DBUS_HANDLER_RESULT_HANDLED
    case DBUS_MESSAGE_TYPE_METHOD_CALL:
      guard let path = dbus_message_get_path(message) else {
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
      }
      // The path from the string cache, as decoding takes it: no string made per call.
      let objectPath = ObjectPath(unchecked: decodedStrings.string(path))
      if let object = objects[objectPath] {
        // Arguments into the storage the last message's left, as for signals: a call
        // answered at once lets go of it, one handed to a task keeps its own.
        handleMethodCall(
          MessageCoding.decode(message, strings: &decodedStrings, body: &receivedArguments),
          raw: message, object: object)
        receivedArguments.removeAll(keepingCapacity: receivedArguments.capacity <= 8)
        return DBUS_HANDLER_RESULT_HANDLED
      }
      // A path above exported objects answers Introspect with its child nodes, so tools
      // that walk the tree from `/` find them.
      guard
        dbus_message_is_method_call(message, "org.freedesktop.DBus.Introspectable", "Introspect")
          != 0,
        !childNodes(of: objectPath).isEmpty
      else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
      handleMethodCall(
        MessageCoding.decode(message), raw: message,
        object: ExportedObject(interfaces: [:], introspection: [:]))
      return DBUS_HANDLER_RESULT_HANDLED
    case DBUS_MESSAGE_TYPE_METHOD_RETURN, DBUS_MESSAGE_TYPE_ERROR:
      return completeCall(message)
        ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    default:
      return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }
  }
}

/// A message built on a sender's thread, on its way to libdbus.
///
/// Safety of @unchecked Sendable: ownership of the `DBusMessage` passes from the thread
/// that built it through the `outgoing` mutex; the builder keeps no reference, so
/// exactly one thread touches it at a time.
struct OutgoingMessage: @unchecked Sendable {
  let raw: OpaquePointer
}

/// The libdbus connection, for sending from any thread.
///
/// Safety of @unchecked Sendable: libdbus connections lock themselves for
/// `dbus_connection_send` (libdbus is always thread-safe since 1.8). Only that call is
/// made through this value, only under the `outgoing` mutex, and the owner clears it
/// under the same mutex before closing the connection, so it is never used after free.
/// A send from another thread does not park in libdbus: it writes at once when it can
/// take the I/O path and otherwise queues and wakes the loop, whose `poll` is outside
/// libdbus.
struct SharedConnection: @unchecked Sendable {
  let raw: OpaquePointer
}

/// Messages on their way to libdbus, and the connection they go to.
struct Outgoing {
  enum SendResult {
    /// Handed to libdbus; `complete` when libdbus also wrote it all to the socket.
    case sent(complete: Bool)
    /// Waiting for the connection; `first` when the queue was empty before.
    case queued(first: Bool)
    /// Refused: the queue is full.
    case full
    /// Refused: the connection is closed.
    case closed
  }

  /// The connection to send to, while connected.
  var target: SharedConnection?
  /// Messages waiting for a connection, in the order they were sent.
  var queue: [OutgoingMessage] = []
  /// Set by ``discardAll()``: nothing is sent any more.
  var closed = false

  /// Sends at once when connected and nothing is waiting (so order is kept), else
  /// queues.
  mutating func send(_ message: OutgoingMessage) -> SendResult {
    guard !closed else { return .closed }
    if let target, queue.isEmpty {
      dbus_connection_send(target.raw, message.raw, nil)
      dbus_message_unref(message.raw)
      return .sent(complete: dbus_connection_has_messages_to_send(target.raw) == 0)
    }
    guard queue.count < BusConnection.maximumQueuedMessages else { return .full }
    queue.append(message)
    return .queued(first: queue.count == 1)
  }

  /// Sends at once when connected and nothing is waiting, never queueing.
  ///
  /// Returns whether libdbus wrote it all; `nil`, having sent nothing, when not
  /// connected (libdbus too must count the connection as connected).
  mutating func sendIfConnected(_ message: OutgoingMessage) -> Bool? {
    guard let target, queue.isEmpty, dbus_connection_get_is_connected(target.raw) != 0 else {
      return nil
    }
    dbus_connection_send(target.raw, message.raw, nil)
    dbus_message_unref(message.raw)
    return dbus_connection_has_messages_to_send(target.raw) == 0
  }

  /// Sets the connection and sends everything waiting for it.
  mutating func connect(_ connection: SharedConnection) {
    target = connection
    for message in queue {
      dbus_connection_send(connection.raw, message.raw, nil)
      dbus_message_unref(message.raw)
    }
    queue.removeAll()
  }

  /// Forgets the connection and drops what is waiting, for good: later sends are refused.
  mutating func discardAll() {
    closed = true
    target = nil
    for message in queue { dbus_message_unref(message.raw) }
    queue.removeAll()
  }
}

/// A call made while connected, waiting for its reply: the reply, a timeout, a
/// cancellation or the loss of the connection completes it, whichever comes first.
///
/// The caller may start waiting before or after the completion.
final class AwaitedReply: Sendable {
  private enum State {
    case waiting(UnsafeContinuation<Result<Message, DBusError>, Never>?)
    case completed(Result<Message, DBusError>?)
  }

  private let state = Mutex(State.waiting(nil))

  /// Waits for the completion; `onCancel` runs when the task is cancelled first.
  ///
  /// A continuation resumed from another thread resumes its task on the generic executor
  /// (the task's executor preference, or the global pool), from where the task hops to its
  /// actor. A caller on an actor would so wake a pool thread, which wakes the actor's:
  /// two thread switches where one does. A caller on an actor with an executor of its own
  /// (the main actor, the connection, an actor on a queue) therefore waits with `thread`
  /// (the connection's, where replies come from) as its executor preference: the completion
  /// resumes it there without a wakeup, and it hops straight to its actor's executor. A
  /// default actor runs on its task's preferred executor, so it would stay on the
  /// connection's thread after the call, running the caller's code there: it, and a
  /// nonisolated caller, are resumed where they wait (their own preference, or the pool).
  ///
  /// The closures capture `isolation` so that they run where the caller is: a closure of
  /// the operations' nonisolated function types would otherwise start on the generic
  /// executor, a hop before the wait.
  func result(
    isolation: isolated (any Actor)? = #isolation, resumedOn thread: ThreadTaskExecutor,
    onCancel: @Sendable () -> Void
  ) async -> Result<Message, DBusError> {
    await withTaskCancellationHandler {
      _ = isolation
      // Not `guard let isolation`: the closure below must capture the isolated parameter
      // itself to run where the caller is; capturing a local copy of it made the closure
      // nonisolated, so the caller hopped to the connection's thread to wait (one more
      // wakeup of that thread, and a write and a read of its wake pipe, per call).
      guard let actor = isolation, hasExecutorOfItsOwn(actor) else { return await result() }
      return await withTaskExecutorPreference(thread) {
        _ = isolation
        return await result()
      }
    } onCancel: {
      onCancel()
    }
  }

  /// Whether `actor` runs on an executor of its own rather than as a default actor.
  ///
  /// An `UnownedSerialExecutor` is the runtime's executor reference, two words: the
  /// executor's identity and its implementation (the `SerialExecutor` witness table, with
  /// flags in its low bits), which is zero for a default actor. When the layout is not
  /// that, the answer is no: the caller then takes the path that is right for every actor.
  private nonisolated func hasExecutorOfItsOwn(_ actor: any Actor) -> Bool {
    guard MemoryLayout<UnownedSerialExecutor>.size == 2 * MemoryLayout<UInt>.size else {
      return false
    }
    let words = unsafe unsafeBitCast(actor.unownedExecutor, to: (UInt, UInt).self)
    return words.1 != 0
  }

  private func result() async -> Result<Message, DBusError> {
    await withUnsafeContinuation { continuation in
      let early = state.withLock { state -> Result<Message, DBusError>? in
        guard case .completed(let result) = state else {
          state = .waiting(continuation)
          return nil
        }
        state = .completed(nil)
        return result
      }
      if let early { continuation.resume(returning: early) }
    }
  }

  /// Completes the call; called once, by whoever took it from ``ReplyWaiters``.
  func complete(_ result: Result<Message, DBusError>) {
    let waiter = state.withLock { state -> UnsafeContinuation<Result<Message, DBusError>, Never>? in
      guard case .waiting(let continuation) = state else { return nil }
      state = .completed(continuation == nil ? result : nil)
      return continuation
    }
    waiter?.resume(returning: result)
  }
}

/// The calls of a connection waiting for their replies, by serial, and the timer that
/// ends those whose timeout passes.
///
/// Whoever takes a call from here completes it: the loop with its reply, the timer, a
/// cancellation, or the loss of the connection. The timer is set for the earliest
/// deadline only when a call's deadline comes before the one it is set for, so calls
/// made one after another with the same timeout do not touch it.
final class ReplyWaiters: Sendable {
  private struct State {
    var calls: [UInt32: (awaited: AwaitedReply, deadline: Int)] = [:]
    /// When the timer fires next (monotonic nanoseconds); `Int.max` when it is not set.
    var timerDeadline = Int.max
  }

  private let state = Mutex(State())
  private let timer: TimerSource

  /// A dispatch timer.
  ///
  /// Safety of @unchecked Sendable: dispatch sources are thread-safe; the source is
  /// scheduled and cancelled through their calls only.
  private struct TimerSource: @unchecked Sendable {
    let source: any DispatchSourceTimer
  }

  init() {
    timer = TimerSource(source: DispatchSource.makeTimerSource(queue: .global()))
    timer.source.setEventHandler { [weak self] in self?.expire() }
    timer.source.activate()
  }

  deinit {
    timer.source.cancel()
  }

  /// Registers a call, setting the timer for its deadline when that comes first.
  func add(_ awaited: AwaitedReply, serial: UInt32, deadline: Int) {
    state.withLock { state in
      state.calls[serial] = (awaited, deadline)
      guard deadline < state.timerDeadline else { return }
      state.timerDeadline = deadline
      // Under the lock, so that concurrent callers set the timer in deadline order.
      arm(for: deadline)
    }
  }

  private func arm(for deadline: Int) {
    let delay = max(0, deadline - MonotonicClock.now)
    timer.source.schedule(deadline: .now() + .nanoseconds(delay), leeway: .milliseconds(1))
  }

  /// Takes the call waiting for reply `serial`, if any.
  func take(_ serial: UInt32) -> AwaitedReply? {
    state.withLock { $0.calls.removeValue(forKey: serial)?.awaited }
  }

  /// Takes every waiting call.
  func takeAll() -> [AwaitedReply] {
    state.withLock { state in
      defer { state.calls.removeAll() }
      return state.calls.values.map(\.awaited)
    }
  }

  /// Ends the calls whose deadline passed and sets the timer for the next one.
  private func expire() {
    let now = MonotonicClock.now
    let expired = state.withLock { state -> [AwaitedReply] in
      var expired: [AwaitedReply] = []
      var next = Int.max
      for (serial, entry) in state.calls {
        if entry.deadline <= now {
          expired.append(entry.awaited)
          state.calls[serial] = nil
        } else {
          next = min(next, entry.deadline)
        }
      }
      state.timerDeadline = next
      if next != Int.max { arm(for: next) }
      return expired
    }
    for awaited in expired {
      awaited.complete(.failure(DBusError(.noReply, "no reply arrived in time")))
    }
  }
}

/// Where a pending call's reply goes.
final class ReplyBox {
  var continuation: CheckedContinuation<Result<Message, DBusError>, Never>?

  func complete(_ result: Result<Message, DBusError>) {
    continuation?.resume(returning: result)
    continuation = nil
  }
}

/// What libdbus's message filter reaches a ``BusConnection`` through: a weak reference.
///
/// Once a connection's last reference is gone, its isolated deinit waits on the event
/// loop's queue while the loop may still dispatch messages (the bus's `Disconnected`
/// among them). An unretained pointer to the connection would let such a message reach
/// a connection whose deinit is pending, and anything that retained it then (a task)
/// would outlive the deinit: the runtime aborts with "deallocated with non-zero retain
/// count". The weak reference reads `nil` from the moment the last reference goes, so
/// those messages are dropped; the deinit closes the connection anyway.
final class FilterTarget: Sendable {
  weak let connection: BusConnection?

  init(_ connection: BusConnection) { self.connection = connection }
}

/// libdbus's filter function: every message dispatched on the connection passes here.
private let messageFilter: DBusHandleMessageFunction = { _, message, data in
  guard let message, let data,
    let connection = Unmanaged<FilterTarget>.fromOpaque(data).takeUnretainedValue().connection
  else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
  // libdbus lends the message for this call only, on the loop thread, which is the
  // connection's executor, so the pointer stays there.
  return connection.handleOnLoop(message)
}

extension BusConnection {
  /// ``handle(_:)`` for a caller on the loop thread that is not isolated to the
  /// connection (libdbus's filter function).
  ///
  /// It does what `assumeIsolated` does, checking the thread first, with a closure that
  /// captures nothing: `assumeIsolated`'s closure would capture the message, and making
  /// that context escaping for the cast costs two allocations per message.
  fileprivate nonisolated func handleOnLoop(_ message: OpaquePointer) -> DBusHandlerResult {
    loop.preconditionInLoop()
    typealias Isolated = (isolated BusConnection, OpaquePointer) -> DBusHandlerResult
    typealias Unisolated = (BusConnection, OpaquePointer) -> DBusHandlerResult
    let body: Isolated = { connection, message in connection.handle(message) }
    return unsafeBitCast(body, to: Unisolated.self)(self, message)
  }
}

/// libdbus's pending-call notify function: the reply (or a timeout error) arrived.
private let pendingCallCompleted: DBusPendingCallNotifyFunction = { pending, data in
  guard let data else { return }
  let box = Unmanaged<ReplyBox>.fromOpaque(data).takeUnretainedValue()
  guard let reply = dbus_pending_call_steal_reply(pending) else {
    box.complete(.failure(DBusError(.noReply, "no reply arrived")))
    return
  }
  defer { dbus_message_unref(reply) }
  let message = MessageCoding.decode(reply)
  box.complete(message.error.map { .failure($0) } ?? .success(message))
}
