public import DBus
public import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Named notifications over D-Bus with Darwin `notify(3)` semantics.
///
/// ```swift
/// let center = try await NotifyCenter.connect()
/// let token = try await center.register("group.example.saved", queue: .main) { token in
///   print("saved")
/// }
/// try center.post("group.example.saved")
/// ```
///
/// Posts are D-Bus signals (see `Protocol/notify.md`): sending never blocks and never
/// flushes. Every registration of a name in this process shares one match rule. The
/// connection's thread reads every signal as it arrives and only marks registrations
/// (plus queues at most one pending handler each), so a slow handler never makes the
/// bus see a slow reader, and memory grows with registrations, not with posts.
///
/// Delivery per registration kind:
/// - dispatch: the handler runs on its queue; posts that arrive while a run is queued
///   and not started coalesce into it. A handler queued for a token that is cancelled
///   before it starts does not run.
/// - check: nothing is delivered; ``check(_:)`` says whether a post arrived since the
///   last check, and the first check of a token is always true.
/// - file descriptor: the token, as 4 bytes big-endian, is written to a pipe. A full
///   pipe drops the write: the reader has unread notifications already.
/// - signal: the signal is sent to this process.
/// - events: an `AsyncSequence` with a bounded buffer keeping the newest events.
///
/// `suspend` and `resume` nest the same way for every kind: posts while suspended
/// collapse into exactly one delivery when the count returns to zero. (Darwin nests for
/// some kinds and not for dispatch registrations.)
///
/// After the bus comes back from a restart, every registration is delivered once, as
/// posts may have been missed.
public final class NotifyCenter: Sendable {
  /// The connection notifications travel on.
  public let connection: BusConnection
  /// Whether posts go through `notifyd` (`Post`) and only `notifyd`'s `Posted` signals
  /// are accepted; see ``connect(to:mediated:)``.
  public let isMediated: Bool
  /// In mediated mode, the unique name owning `org.notifybus.Notify1` and a counter of
  /// its changes.
  let serviceOwner = Mutex<(name: String?, generation: UInt64)>((nil, 0))
  let registry = Mutex(Registry())
  /// ``NotifyProcess``'s fork generation when the center was made (see `NotifyProcess.swift`).
  let forkGeneration = NotifyProcess.generation
  /// The count of this center's posts, and of its posts of each name.
  private let postCounts = Mutex<(all: UInt64, names: PostCounts)>((0, PostCounts()))
  /// Held while a connection-thread handler runs (``register(_:queue:handler:)`` with no
  /// queue), so that a cancel from another thread can wait for a call under way.
  let connectionHandlerGate = Mutex(())
  /// The match rules of every name registered here, one per name's interface, by the
  /// interface's part after ``NotifyWire/interfacePrefix`` (which for most names is the
  /// name itself, so the rule shares its string); their `Posted` signals reach
  /// ``receivedPost(_:)``.
  let postRules: SignalRuleSet
  /// The same for names whose interface is hashed (``NotifyWire/hashedInterfacePrefix``).
  let hashedPostRules: SignalRuleSet

  /// Tokens are unique across every center of the process.
  private static let lastToken = Atomic<Int32>(1)

  /// Every center of the process, so that `self.` names reach all of them.
  private static let processCenters = Mutex<[WeakCenter]>([])

  /// How the rule set's handler reaches its center without holding it.
  private final class PostRouter: @unchecked Sendable {
    // Safety of @unchecked Sendable: `center` is written once, in the center's init,
    // before the rule set holds any rule (so before the connection's thread can call
    // the handler), and only read afterwards.
    weak var center: NotifyCenter?
  }

  private struct WeakCenter: @unchecked Sendable {
    // Safety of @unchecked Sendable: a weak reference to a Sendable class, read and
    // written only under `processCenters`' lock.
    weak var center: NotifyCenter?
  }

  init(connection: BusConnection, mediated: Bool = false) {
    self.connection = connection
    self.isMediated = mediated
    // The rule set's handler reaches the center through a weak reference set below,
    // before any rule is added.
    let router = PostRouter()
    let template = MatchRule.signal(member: NotifyWire.member, path: NotifyWire.path)
    postRules = connection.ruleSet(template, interfacePrefix: NotifyWire.interfacePrefix) {
      (signal: borrowing ReceivedSignal) in router.center?.receivedPost(signal)
    }
    hashedPostRules = connection.ruleSet(
      template, interfacePrefix: NotifyWire.hashedInterfacePrefix
    ) { (signal: borrowing ReceivedSignal) in router.center?.receivedPost(signal) }
    router.center = self
    Self.processCenters.withLock { centers in
      centers.removeAll { $0.center == nil }
      centers.append(WeakCenter(center: self))
    }
  }

  /// Connects to a bus and returns a center that uses it.
  ///
  /// In mediated mode (the default on the system bus) posts are `Post` calls to
  /// `notifyd`, which checks the caller's rights and emits the signal itself, and
  /// registrations accept `Posted` signals only from the current owner of
  /// `org.notifybus.Notify1`: a process that sends the signal directly is ignored.
  ///
  /// - Parameters:
  ///   - bus: Which bus; by default `NOTIFYBUS_BUS_ADDRESS`, the session bus, or the
  ///     embedded bus.
  ///   - mediated: Whether posts go through `notifyd`; `nil` means yes on
  ///     ``DBus/Bus/system`` only.
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/serverNotFound`` when no bus
  ///   can be reached, naming the bus and the reason.
  public static func connect(to bus: Bus = .automatic, mediated: Bool? = nil)
    async throws(NotifyError) -> NotifyCenter
  {
    let connection: BusConnection
    do {
      connection = try await BusConnection.connect(to: bus)
    } catch {
      throw NotifyError(
        .serverNotFound, "cannot reach the \(bus) bus: \(error.message)", cause: .bus(error))
    }
    let center = NotifyCenter(connection: connection, mediated: mediated ?? (bus == .system))
    await center.watchConnection()
    if center.isMediated {
      do {
        try await center.trackServiceOwner()
      } catch {
        await connection.close()
        throw error
      }
    }
    return center
  }

  /// Closes the connection.
  ///
  /// Registrations stay valid for ``check(_:)`` but receive nothing more.
  public func close() async {
    await connection.close()
  }

  private func watchConnection() async {
    let wasDown = Mutex(false)
    _ = await connection.addStateObserver { [weak self] state in
      switch state {
      case .reconnecting:
        wasDown.withLock { $0 = true }
      case .connected:
        if wasDown.withLock({ down in
          defer { down = false }
          return down
        }) {
          self?.resynchronize()
        }
      default:
        break
      }
    }
  }

  // MARK: - Posting

  /// Posts `name`: every registration of it, in any process on the bus, is told.
  ///
  /// Returns at once; nothing blocks. Posting a name nobody watches is fine. A `self.`
  /// name is delivered only inside this process.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/failed`` when the connection
  ///   is closed or its send queue is full.
  public func post(_ name: NotifyName) throws(NotifyError) {
    try checkUsable()
    if name.isProcessLocal {
      let centers = Self.processCenters.withLock { $0.compactMap(\.center) }
      for center in centers { center.deliver(name, to: .name(name), sender: nil, sequence: nil) }
      return
    }
    do {
      if isMediated {
        var call = NotifyWire.mediatedPost(name)
        call.noReplyExpected = true
        try connection.send(call)
        return
      }
      // Counted and sent under one lock, so the counts go out in order.
      try postCounts.withLock { counts throws(DBusError) in
        counts.all += 1
        let (nameSequence, interface) = counts.names.nextPost(of: name)
        try connection.send(
          NotifyWire.signal(
            for: name, sequence: counts.all, nameSequence: nameSequence, interface: interface))
      }
    } catch {
      throw NotifyError(.failed, "cannot post '\(name)': \(error.message)", cause: .bus(error))
    }
  }

  /// Posts a name given as a string.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/invalidName`` for an invalid
  ///   name, or as ``post(_:)-(NotifyName)``.
  public func post(_ name: String) throws(NotifyError) {
    try post(NotifyName(name))
  }

  /// Waits until the bus has routed every post made before: a synchronous call after an
  /// asynchronous post is an ordering fence, as on Darwin.
  public func synchronize() async throws(NotifyError) {
    do {
      try await connection.flush()
    } catch {
      throw Self.unanswered(error)
    }
  }

  /// Writes the round trip of ``synchronize()`` now, from the caller's thread.
  ///
  /// The value's ``PendingSynchronization/wait()`` waits for the bus to answer it, so a
  /// caller can wait for something else meanwhile. The wait is not cut short by a
  /// cancellation.
  package func startSynchronizing() -> PendingSynchronization {
    do {
      return PendingSynchronization(call: .success(try connection.startFlush()))
    } catch {
      return PendingSynchronization(call: .failure(Self.unanswered(error)))
    }
  }

  /// A round trip made by ``startSynchronizing()``.
  package struct PendingSynchronization: Sendable {
    let call: Result<PendingCall, NotifyError>

    /// Waits until the bus has answered: every post made before the round trip was
    /// written is routed.
    package func wait() async throws(NotifyError) {
      let pending = try call.get()
      do {
        _ = try await pending.reply()
      } catch {
        throw NotifyCenter.unanswered(error)
      }
    }
  }

  private static func unanswered(_ error: DBusError) -> NotifyError {
    NotifyError(.failed, "the bus did not answer: \(error.message)", cause: .bus(error))
  }

  // MARK: - Registering

  /// Registers a handler that runs on `queue` with the token each time `name` is
  /// posted; with no queue (`nil`), on the connection's own thread.
  ///
  /// Returns once the bus routes posts of `name` here: a post made after this returns
  /// is delivered.
  ///
  /// With a queue, posts that arrive while a run is queued and not started coalesce
  /// into it. Without one, a post reaches the handler as soon as the connection has read
  /// it, with no hop to another thread: calls come one at a time in arrival order, the
  /// handler must return quickly and not block (the connection reads nothing else
  /// meanwhile), a cancel from another thread waits for a call under way, and the
  /// delivery that ends a suspension is made on the connection's thread too. Either way
  /// the handler never runs after ``cancel(_:)`` returns.
  public func register(
    _ name: NotifyName, queue: DispatchQueue?,
    handler: @escaping @Sendable (NotifyToken) -> Void
  ) async throws(NotifyError) -> NotifyToken {
    guard let queue else { return try await registerOnConnectionThread(name, handler: handler) }
    return try await add(.name(name)) { token in
      .dispatch(QueuedHandler(queue: queue, token: token, handler: handler))
    }
  }

  /// Registers for polling with ``check(_:)``.
  public func registerCheck(_ name: NotifyName) async throws(NotifyError) -> NotifyToken {
    try await add(.name(name), .check)
  }

  /// Registers a pipe that receives the token, 4 bytes big-endian, for each post.
  ///
  /// - Parameter fileDescriptor: `nil` to make a new pipe, or the read end of a pipe
  ///   this center made for an earlier registration, to share it.
  /// - Returns: The token and the read end to watch. The pipe is closed when its last
  ///   registration is cancelled.
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/invalidFile`` when
  ///   `fileDescriptor` was not made by this center.
  public func registerFileDescriptor(_ name: NotifyName, reusing fileDescriptor: CInt? = nil)
    async throws(NotifyError) -> (token: NotifyToken, fileDescriptor: CInt)
  {
    try checkUsable()
    let ends = try registry.withLock { registry throws(NotifyError) -> (CInt, CInt) in
      if let fileDescriptor {
        guard let write = registry.pipes[fileDescriptor]?.write else {
          throw NotifyError(
            .invalidFile, "file descriptor \(fileDescriptor) was not made by this notify center")
        }
        registry.pipes[fileDescriptor]?.users += 1
        return (fileDescriptor, write)
      }
      var fds: [CInt] = [-1, -1]
      guard pipe(&fds) == 0 else {
        throw NotifyError(
          .failed, "cannot make a pipe for '\(name)': errno \(errno)",
          cause: .systemCall("pipe", errno: errno))
      }
      for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
      _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
      registry.pipes[fds[0]] = Registry.Pipe(write: fds[1], users: 1)
      return (fds[0], fds[1])
    }
    do {
      let token = try await add(.name(name), .fileDescriptor(write: ends.1, read: ends.0))
      return (token, ends.0)
    } catch {
      registry.withLock { $0.releasePipe(ends.0) }
      throw error
    }
  }

  /// Registers to have `signal` sent to this process for each post.
  ///
  /// Which name fired can only be told by calling ``check(_:)`` on each token.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/invalidSignal`` for a number
  ///   outside 1 through 64.
  public func registerSignal(_ name: NotifyName, signal: CInt) async throws(NotifyError)
    -> NotifyToken
  {
    guard (1...64).contains(signal), signal != SIGKILL, signal != SIGSTOP else {
      throw NotifyError(.invalidSignal, "signal \(signal) cannot be used for notifications")
    }
    return try await add(.name(name), .signal(signal))
  }

  /// The posts of `name` as an asynchronous sequence.
  ///
  /// - Parameter bufferSize: How many undelivered events to keep; older ones are dropped
  ///   (they coalesce) when the consumer falls behind.
  public func events(for name: NotifyName, bufferSize: Int = 1) async throws(NotifyError)
    -> NotifyEvents
  {
    try await makeEvents([.name(name)], bufferSize: bufferSize)
  }

  /// The posts of every name in the namespace `prefix` (the name itself, or any name that continues
  /// it after a `.`), as an asynchronous sequence.
  ///
  /// A NotifyBus addition.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/invalidName`` when `prefix` is
  ///   not a bus-name-like namespace (elements of `[A-Za-z0-9_-]` not starting with a
  ///   digit).
  public func events(inNamespace prefix: String, bufferSize: Int = 64) async throws(NotifyError)
    -> NotifyEvents
  {
    _ = try NotifyWire.rule(forNamespace: prefix)
    return try await makeEvents([.namespace(prefix)], bufferSize: bufferSize)
  }

  /// The posts of several names and namespaces as one asynchronous sequence, in the
  /// order they arrived.
  ///
  /// - Throws: As ``events(for:bufferSize:)`` and ``events(inNamespace:bufferSize:)``.
  public func events(
    for names: [NotifyName], inNamespaces namespaces: [String] = [], bufferSize: Int = 64
  ) async throws(NotifyError) -> NotifyEvents {
    for prefix in namespaces { _ = try NotifyWire.rule(forNamespace: prefix) }
    return try await makeEvents(
      names.map(Subject.name) + namespaces.map(Subject.namespace), bufferSize: bufferSize)
  }

  private func makeEvents(_ subjects: [Subject], bufferSize: Int) async throws(NotifyError)
    -> NotifyEvents
  {
    let (stream, continuation) = AsyncStream.makeStream(
      of: NotifyEvent.self, bufferingPolicy: .bufferingNewest(max(1, bufferSize)))
    var tokens: [NotifyToken] = []
    do {
      for subject in subjects { tokens.append(try await add(subject, .stream(continuation))) }
    } catch {
      for token in tokens { try? cancel(token) }
      throw error
    }
    let registered = tokens
    continuation.onTermination = { [weak self] _ in
      for token in registered { try? self?.cancel(token) }
    }
    return NotifyEvents(tokens: tokens, stream: stream)
  }

  func add(_ subject: Subject, _ delivery: Delivery) async throws(NotifyError)
    -> NotifyToken
  {
    try await add(subject) { _ in delivery }
  }

  /// Adds a registration whose delivery is made for its token.
  func add(_ subject: Subject, delivery makeDelivery: (NotifyToken) -> Delivery)
    async throws(NotifyError) -> NotifyToken
  {
    try checkUsable()
    let raw = Self.lastToken.add(1, ordering: .relaxed).newValue
    guard raw > 0 else { throw NotifyError(.failed, "this process has used every token") }
    let token = NotifyToken(rawValue: raw)
    let pending = registry.withLock { registry in
      registry.insert(Registration(token: token, subject: subject, delivery: makeDelivery(token)))
      return registry.subscription(for: subject, isLocal: isLocal(subject)) {
        Task { await self.subscribe(subject) }
      }
    }
    guard let pending else { return token }
    if case .failure(let error) = await pending.value {
      try? cancel(token)
      throw NotifyError(.failed, "cannot watch \(subject): \(error.message)", cause: .bus(error))
    }
    return token
  }

  private func isLocal(_ subject: Subject) -> Bool {
    if case .name(let name) = subject { return name.isProcessLocal }
    return false
  }

  /// Adds the match rule for `subject` and routes what it matches to its registrations.
  ///
  /// A name's rule goes into the center's rule set, so that thousands of names cost an
  /// interface each on the connection; a namespace has a subscription of its own.
  private func subscribe(_ subject: Subject) async -> Result<Void, DBusError> {
    do throws(DBusError) {
      let subscription: Registry.BusSubscription
      switch subject {
      case .name(let name):
        let (rules, suffix) = postRule(for: name)
        try await rules.add(interfaceSuffix: suffix)
        subscription = .name
      case .namespace(let prefix):
        let rule: MatchRule
        do {
          rule = try NotifyWire.rule(forNamespace: prefix)
        } catch {
          throw DBusError(.matchRuleInvalid, error.message)
        }
        subscription = .rule(
          try await connection.subscribe(rule) { [weak self] message in
            self?.received(message, for: subject)
          })
      }
      let orphaned = registry.withLock { $0.subscribed(subject, subscription) }
      if orphaned { await unsubscribe(subject, subscription) }
      return .success(())
    } catch {
      registry.withLock { $0.subscriptionFailed(subject) }
      return .failure(error)
    }
  }

  /// The rule set that holds `name`'s rule, and the part of its interface it keeps: the
  /// name's own string when the interface is the prefix and the name, so the rule shares it.
  private func postRule(for name: NotifyName) -> (SignalRuleSet, String) {
    let interface = NotifyWire.interface(for: name).rawValue
    for rules in [postRules, hashedPostRules]
    where interface.utf8.starts(with: rules.interfacePrefix.utf8) {
      let suffix = interface.utf8.dropFirst(rules.interfacePrefix.utf8.count)
      return (
        rules,
        suffix.elementsEqual(name.rawValue.utf8)
          ? name.rawValue : String(decoding: suffix, as: UTF8.self)
      )
    }
    preconditionFailure("interface '\(interface)' has neither notification prefix")
  }

  /// Ends a subject's subscription on the bus.
  func unsubscribe(_ subject: Subject, _ subscription: Registry.BusSubscription) async {
    switch (subject, subscription) {
    case (.name(let name), .name):
      let (rules, suffix) = postRule(for: name)
      await rules.remove(interfaceSuffix: suffix)
    case (_, .rule(let subscription)):
      await subscription.cancel()
    case (.namespace, .name):
      preconditionFailure("a namespace is never in the rule set")
    }
  }

  // MARK: - Receiving

  /// Handles a `Posted` signal that matched a name's rule, on the connection's thread,
  /// read in place: no message is made for it.
  ///
  /// The rule matched the signal's type, member, path and interface; the first argument
  /// must be the name whose interface that is, and a second argument, when present, a
  /// `t` (``NotifyWire/isPosted(_:name:interface:)``).
  fileprivate func receivedPost(_ signal: borrowing ReceivedSignal) {
    let (first, second, third) = signal.arguments { ($0.next(), $0.next(), $0.next()) }
    guard case .string(let text)? = first, let name = try? NotifyName(text),
      let interface = signal.interface, NotifyWire.isInterface(interface, of: name),
      second.map({ if case .uint64 = $0 { true } else { false } }) ?? true
    else {
      registry.withLock { $0.malformedSignals += 1 }
      return
    }
    received(
      name, for: .name(name), sender: signal.sender?.rawValue, sequence: second?.uint64Value,
      nameSequence: third?.uint64Value)
  }

  /// Handles a signal routed to `subject`'s subscription (a namespace's), on the
  /// connection's thread.
  private func received(_ message: Message, for subject: Subject) {
    let posted: NotifyName?
    switch subject {
    case .name(let expected):
      posted = NotifyWire.isPosted(message, name: expected) ? expected : nil
    case .namespace(let prefix):
      posted = NotifyWire.postedName(in: message).flatMap {
        $0.isInside(namespace: prefix) ? $0 : nil
      }
    }
    guard let name = posted else {
      registry.withLock { $0.malformedSignals += 1 }
      return
    }
    received(
      name, for: subject, sender: message.sender?.rawValue,
      sequence: message.body.count > 1 ? message.body[1].uint64Value : nil,
      nameSequence: NotifyWire.nameSequence(in: message))
  }

  /// Delivers a well-formed post of `name` from `sender` to `subject`'s registrations,
  /// unless a mediated center must refuse it or its count shows a gap.
  private func received(
    _ name: NotifyName, for subject: Subject, sender: String?, sequence: UInt64?,
    nameSequence: UInt64?
  ) {
    guard !isMediated || isFromService(sender) else {
      registry.withLock { $0.malformedSignals += 1 }
      return
    }
    // One lock for the gap check and the post.
    let actions = registry.withLock { registry -> Registry.Actions? in
      if let sender, let nameSequence,
        registry.nameSequences.isGap(from: sender, name: name, count: nameSequence)
      {
        return nil
      }
      return registry.post(
        name, to: subject, sender: sender, sequence: sequence, nameSequence: nameSequence,
        resynchronization: false)
    }
    guard let actions else {
      // The bus dropped posts on their way here: its queue for this connection was full
      // (the process was stopped or starved). Any name may have lost posts, so every
      // registration is told once, as after a reconnect; that delivery stands for this
      // post too.
      resynchronize(gap: true)
      return
    }
    perform(actions, batched: true)
  }

  /// Marks every registration of `subject` as posted and delivers to those not
  /// suspended.
  func deliver(
    _ name: NotifyName, to subject: Subject, sender: String?, sequence: UInt64?,
    nameSequence: UInt64? = nil
  ) {
    let actions = registry.withLock { registry in
      registry.post(
        name, to: subject, sender: sender, sequence: sequence, nameSequence: nameSequence,
        resynchronization: false)
    }
    perform(actions)
  }

  /// Delivers once to every registration: after the bus came back, or on a gap in a
  /// poster's count (`gap`).
  private func resynchronize(gap: Bool = false) {
    let actions = registry.withLock { registry in
      if gap {
        registry.sequenceGaps += 1
      } else {
        // A new bus hands out the old unique names again.
        registry.nameSequences.removeAll()
      }
      return registry.resynchronizeAll()
    }
    perform(actions)
  }

  /// Carries out what the registry asked for, outside its lock.
  ///
  /// `batched` is for signals received on the connection's thread: dispatch handlers are
  /// then queued once the connection has handled the batch of messages that one read
  /// brought, so that a burst of posts costs one hop to each handler's queue, not one
  /// per post (the posts coalesce meanwhile, as they do while a handler is queued).
  func perform(_ actions: Registry.Actions, batched: Bool = false) {
    for action in actions {
      switch action {
      case .dispatch(let handler):
        if batched {
          connection.afterDispatch(handler.enqueue)
        } else {
          handler.enqueue()
        }
      case .yield(let continuation, let event):
        continuation.yield(event)
      case .signal(let number):
        kill(getpid(), number)
      case .immediate(let handler, let token):
        handler(token)
      case .connectionThread(let handler, let token):
        call(handler, token)
      }
    }
  }

  // MARK: - Tokens

  /// Whether a post reached the registration since the last call; the first call on a
  /// token returns true.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/invalidToken`` for a token
  ///   that is not live.
  public func check(_ token: NotifyToken) throws(NotifyError) -> Bool {
    try checkUsable()
    return try registry.withLock { registry throws(NotifyError) in
      let changed = registry.updateRegistration(token) { registration in
        defer { registration.checkedCount = registration.postCount }
        return registration.postCount != registration.checkedCount
      }
      guard let changed else { throw Self.invalid(token) }
      return changed
    }
  }

  /// Whether a post reached the registration since the last check, counting every post
  /// the bus routed before this call: the check Darwin's shared-memory tokens give.
  ///
  /// ``check(_:)`` answers from the posts this process has read. A post that another
  /// process fenced (its ``synchronize()`` returned) is routed, but may still be on its
  /// way here, so a plain check right after can miss it. This one first makes a round
  /// trip to the bus (`org.freedesktop.DBus.Peer.Ping`): the bus queues its reply behind
  /// every signal it routed here before, and this connection reads them in order, so the
  /// post has been counted when the reply arrives. When the bus does not answer, it
  /// answers from what has arrived (a reconnect then delivers to every registration).
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/invalidToken`` for a token
  ///   that is not live.
  public func synchronizedCheck(_ token: NotifyToken) async throws(NotifyError) -> Bool {
    try checkUsable()
    guard isValid(token) else { throw Self.invalid(token) }
    try? await connection.flush()
    return try check(token)
  }

  /// How many posts reached the registration since it was made: a count where Darwin gives only
  /// "changed".
  ///
  /// A NotifyBus addition; deliveries may still coalesce.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/invalidToken`` for a token
  ///   that is not live.
  public func postCount(_ token: NotifyToken) throws(NotifyError) -> UInt64 {
    try registry.withLock { registry throws(NotifyError) in
      guard let postCount = registry.updateRegistration(token, { $0.postCount }) else {
        throw Self.invalid(token)
      }
      return postCount - 1
    }
  }

  /// Ends a registration at once: nothing more is delivered for it, not even a handler already
  /// queued.
  ///
  /// Callable from inside the registration's own handler.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/invalidToken`` for a token
  ///   that is not live.
  public func cancel(_ token: NotifyToken) throws(NotifyError) {
    try checkUsable()
    guard let removal = registry.withLock({ $0.remove(token) }) else { throw Self.invalid(token) }
    switch removal.registration.delivery {
    case .immediate, .connectionThread:
      // A connection-thread handler may be running for this token: it ends before
      // cancel returns, and later calls see the token is gone.
      if !connection.isOnConnectionThread { connectionHandlerGate.withLock { _ in } }
    case .dispatch, .check, .fileDescriptor, .signal, .stream:
      break
    }
    // A stream may serve several registrations; it ends with the last of them.
    removal.finishedStream?.finish()
    if let unsubscribe = removal.unsubscribe {
      let subject = removal.registration.subject
      Task { await self.unsubscribe(subject, unsubscribe) }
    }
  }

  /// Whether `token` is a live registration of this center.
  public func isValid(_ token: NotifyToken) -> Bool {
    !isInherited && registry.withLock { $0.registrations[token] != nil }
  }

  /// Pauses delivery to a registration.
  ///
  /// Calls nest; posts meanwhile collapse into one delivery when the last ``resume(_:)`` comes.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/invalidToken`` for a token
  ///   that is not live.
  public func suspend(_ token: NotifyToken) throws(NotifyError) {
    try checkUsable()
    try registry.withLock { registry throws(NotifyError) in
      guard registry.registrations[token] != nil else { throw Self.invalid(token) }
      registry.registrations[token]?.suspendCount += 1
    }
  }

  /// Undoes one ``suspend(_:)``; the last one delivers once if posts arrived meanwhile.
  ///
  /// Resuming a token that is not suspended does nothing, as on Darwin (status 0).
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/invalidToken`` for a token
  ///   that is not live.
  public func resume(_ token: NotifyToken) throws(NotifyError) {
    try checkUsable()
    let actions = try registry.withLock { registry throws(NotifyError) in
      try registry.resume(token)
    }
    perform(actions)
  }

  /// The name a token watches, for name registrations.
  public func name(of token: NotifyToken) throws(NotifyError) -> NotifyName? {
    try checkUsable()
    return try registry.withLock { registry throws(NotifyError) in
      guard let registration = registry.registrations[token] else { throw Self.invalid(token) }
      if case .name(let name) = registration.subject { return name }
      return nil
    }
  }

  /// The kind of delivery a token uses: `dispatch`, `check`, `file`, `signal` or
  /// `stream`.
  public func deliveryType(of token: NotifyToken) throws(NotifyError) -> String {
    try registry.withLock { registry throws(NotifyError) in
      guard let registration = registry.registrations[token] else { throw Self.invalid(token) }
      return registration.delivery.typeName
    }
  }

  static func invalid(_ token: NotifyToken) -> NotifyError {
    NotifyError(.invalidToken, "token \(token) is not a live registration")
  }

  // MARK: - Statistics

  /// Counters for diagnostics and tests.
  public struct Statistics: Hashable, Sendable {
    /// Live registrations.
    public var registrations: Int
    /// Names and namespaces with a subscription on the bus.
    public var subscriptions: Int
    /// `Posted` signals that were malformed, did not match their interface, or (in
    /// mediated mode) did not come from `notifyd`, ignored.
    public var malformedSignals: Int
    /// Deliveries made (handlers queued, events yielded, bytes written, signals sent).
    public var deliveries: Int
    /// Gaps seen in a poster's count of a name's posts: the bus dropped posts for this
    /// center, and every registration was resynchronized.
    public var sequenceGaps: Int
  }

  /// The current counters.
  public var statistics: Statistics {
    registry.withLock {
      Statistics(
        registrations: $0.registrations.count, subscriptions: $0.subjects.count,
        malformedSignals: $0.malformedSignals, deliveries: $0.deliveries,
        sequenceGaps: $0.sequenceGaps)
    }
  }
}

extension Subject: CustomStringConvertible {
  var description: String {
    switch self {
    case .name(let name): "'\(name)'"
    case .namespace(let prefix): "namespace '\(prefix)'"
    }
  }
}
