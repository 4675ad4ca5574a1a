import CDBus
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
/// A lost bus is routine: the connection reconnects with backoff (25 ms doubling to 250 ms),
/// adds every match rule again, requests its names again and reports each step through
/// ``state`` and ``stateChanges()``. Messages sent while reconnecting wait in the queue
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

  /// The libdbus connection; `nil` while reconnecting and after closing.
  var raw: OpaquePointer?
  /// What `raw`'s message filter reaches this connection through.
  private var filterTarget: FilterTarget?
  /// The current state.
  public private(set) var state: State = .connecting
  /// The address the connection reached.
  public private(set) var address: BusAddress?
  var isClosed = false
  var nextIdentifier: UInt64 = 1
  var stateObservers: [UInt64: @Sendable (State) -> Void] = [:]
  var pendingReplies: [ObjectIdentifier: ReplyBox] = [:]
  private var reconnectTask: Task<Void, Never>?

  // Signal routing (see BusConnection+Signals.swift).
  var rules: [String: RuleEntry] = [:]
  var subscribers: [UInt64: Subscriber] = [:]
  var subscribersByInterface: [InterfaceName: InlineList<UInt64>] = [:]
  var subscribersWithoutInterface: [UInt64] = []
  /// The long strings of recent messages, reused while decoding the next ones.
  var decodedStrings = StringCache(capacity: 16)

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

  private func open() async throws(DBusError) {
    var lastError = DBusError(.noServer, "no bus to try")
    for candidate in try bus.candidates() {
      do throws(DBusError) {
        if let address = candidate.address {
          try await openConnection(to: address)
        } else {
          try await openConnection(to: EmbeddedBus.start())
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
    guard case .string(let name)? = reply.body.first, let uniqueName = try? BusName(name) else {
      discardConnection()
      throw DBusError(.failed, "the bus answered Hello without a unique name")
    }
    dbus_bus_set_unique_name(connection, name)
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
    reconnectTask = Task(executorPreference: loop) { [weak self] in
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

  /// Adds every match rule again and requests every owned name again.
  ///
  /// The rules are sent without waiting for each reply; one round trip at the end
  /// confirms the bus has processed them all, since it handles a connection's messages
  /// in order.
  private func restoreRegistrations() async throws(DBusError) {
    for rule in rules.keys {
      var message = busMethod("AddMatch", [.string(rule)])
      message.noReplyExpected = true
      try send(message)
    }
    _ = try await call(busMethod("GetId"))
    for (name, flags) in ownedNames {
      _ = try await requestName(name, flags: flags)
    }
  }

  /// Closes the connection: pending calls fail with ``DBusError/Name/disconnected``, signal streams
  /// finish, and the event-loop thread ends.
  ///
  /// Idempotent.
  public func close() {
    guard !isClosed else { return }
    isClosed = true
    reconnectTask?.cancel()
    discardConnection()
    for subscriber in subscribers.values { subscriber.finish?() }
    subscribers.removeAll()
    rules.removeAll()
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
    let built = OutgoingMessage(raw: try MessageCoding.makeRaw(message))
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
    }
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
  public func flush() async throws(DBusError) {
    _ = try await call(
      .methodCall(
        destination: .bus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus.Peer",
        member: "Ping"))
  }

  // MARK: - Method calls

  /// Calls a method and waits for its reply.
  ///
  /// Messages passed to ``send(_:)`` before this call go out before it.
  ///
  /// - Parameters:
  ///   - message: A method call.
  ///   - timeout: How long to wait for the reply.
  /// - Returns: The method's reply.
  /// - Throws: ``DBusError``: the error the peer replied with, ``DBusError/Name/noReply``
  ///   when the timeout passes, ``DBusError/Name/disconnected`` when the connection is
  ///   lost first.
  public func call(_ message: Message, timeout: Duration = .seconds(25)) async throws(DBusError)
    -> Message
  {
    guard message.kind == .methodCall else {
      throw DBusError(.invalidArgs, "only a method call has a reply to wait for")
    }
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
      deliverSignal(MessageCoding.decode(message, strings: &decodedStrings))
      return DBUS_HANDLER_RESULT_HANDLED
    case DBUS_MESSAGE_TYPE_METHOD_CALL:
      guard let path = dbus_message_get_path(message) else {
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
      }
      let objectPath = ObjectPath(unchecked: String(cString: path))
      if let object = objects[objectPath] {
        handleMethodCall(MessageCoding.decode(message, strings: &decodedStrings), object: object)
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
        MessageCoding.decode(message), object: ExportedObject(interfaces: [:], introspection: [:]))
      return DBUS_HANDLER_RESULT_HANDLED
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
  }

  /// The connection to send to, while connected.
  var target: SharedConnection?
  /// Messages waiting for a connection, in the order they were sent.
  var queue: [OutgoingMessage] = []

  /// Sends at once when connected and nothing is waiting (so order is kept), else
  /// queues.
  mutating func send(_ message: OutgoingMessage) -> SendResult {
    if let target, queue.isEmpty {
      dbus_connection_send(target.raw, message.raw, nil)
      dbus_message_unref(message.raw)
      return .sent(complete: dbus_connection_has_messages_to_send(target.raw) == 0)
    }
    guard queue.count < BusConnection.maximumQueuedMessages else { return .full }
    queue.append(message)
    return .queued(first: queue.count == 1)
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

  /// Forgets the connection and drops what is waiting.
  mutating func discardAll() {
    target = nil
    for message in queue { dbus_message_unref(message.raw) }
    queue.removeAll()
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
