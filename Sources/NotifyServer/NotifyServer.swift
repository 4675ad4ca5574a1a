public import DBus
import Dispatch
public import NotifyBridge
import NotifyCore
public import NotifyServerFiles
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// `notifyd`: the service behind `org.notifybus.Notify1`, which keeps the 64-bit state
/// of every name, posts on behalf of callers after checking their rights, and counts the
/// posts it sees on the bus.
///
/// ```swift
/// let connection = try await BusConnection.connect(to: .session)
/// let server = try await NotifyServer.start(on: connection, configuration: .init())
/// // ... until SIGTERM
/// await server.stop()
/// ```
///
/// Every method call is answered from one table under a lock, so concurrent callers
/// never lose an update. Calls of one caller are handled in the order they arrive, even
/// while its user id is being looked up.
public final class NotifyServer: Sendable {
  /// How the server behaves.
  public struct Configuration: Sendable {
    /// Who may post and set the state of which names.
    public var policy: AccessPolicy
    /// Where state persists; `nil` keeps it in memory only.
    public var store: StateStore?
    /// The most names the table holds (see `Protocol/notifyd.md`).
    public var capacity: Int
    /// How long after a change the state file is written.
    public var saveDelay: Duration
    /// Where log lines go; standard error by default.
    public var log: @Sendable (String) -> Void
    /// The MQTT brokers to bridge names to (`Protocol/bridge.md`); none by default.
    public var bridges: [BridgeConfiguration] = []

    /// Creates a configuration.
    public init(
      policy: AccessPolicy = AccessPolicy(), store: StateStore? = nil, capacity: Int = 100_000,
      saveDelay: Duration = .milliseconds(100),
      log: @escaping @Sendable (String) -> Void = NotifyServer.logToStandardError
    ) {
      self.policy = policy
      self.store = store
      self.capacity = capacity
      self.saveDelay = saveDelay
      self.log = log
    }
  }

  /// The server's connection.
  public let connection: BusConnection
  let configuration: Configuration
  /// The access rules in force: the configuration's until ``replaceAccessPolicy(_:)``.
  private let policy: Mutex<AccessPolicy>
  let state: Mutex<ServerState>
  /// Serializes state file writes.
  private let writer = Mutex<Void>(())
  /// Where state file writes run: they block on `fsync`, which must not hold a thread of
  /// the Swift concurrency pool.
  private let saveQueue = DispatchQueue(label: "notifyd.state-file")
  private let subscriptions = Mutex<[SignalSubscription]>([])
  let bridging = Mutex(Bridging())
  /// Held from a post's numbering to its send, by every thread that posts (the
  /// connection's, for mediated posts, and a broker's, for bridged ones): the bus then
  /// carries the server's posts in the order of their numbers, so each name's count rises
  /// one at a time for receivers (a post numbered first and sent second looked like a
  /// lost post, and receivers deliver every name once for one).
  let posting = Mutex<Void>(())

  init(connection: BusConnection, configuration: Configuration, records: [StateRecord]) {
    self.connection = connection
    self.configuration = configuration
    policy = Mutex(configuration.policy)
    var initial = ServerState(capacity: configuration.capacity)
    initial.table.load(records)
    initial.startTime = Self.realtimeNanoseconds()
    state = Mutex(initial)
  }

  /// The access rules in force.
  public var accessPolicy: AccessPolicy { policy.withLock { $0 } }

  /// Puts new access rules in force, as `notifyd` does on `SIGHUP`: calls that arrive from
  /// now on are checked against them; a call already being checked keeps the old ones.
  public func replaceAccessPolicy(_ newPolicy: AccessPolicy) {
    policy.withLock { $0 = newPolicy }
  }

  /// Loads the state file, serves the interface, watches the bus, and takes the name.
  ///
  /// - Throws: ``NotifydError``: ``NotifydError/Code/nameTaken`` when another connection
  ///   owns `org.notifybus.Notify1`, ``NotifydError/Code/stateFile`` when the state file
  ///   exists but cannot be read, ``NotifydError/Code/bus`` when the bus fails.
  public static func start(on connection: BusConnection, configuration: Configuration)
    async throws(NotifydError) -> NotifyServer
  {
    var records: [StateRecord] = []
    if let store = configuration.store {
      do {
        switch try store.load() {
        case .missing:
          configuration.log("no state file yet at \(store.path)")
        case .records(let loaded):
          records = loaded
          configuration.log("loaded the state of \(loaded.count) names from \(store.path)")
        case .corrupt(let error, let aside):
          configuration.log(
            "ignoring the corrupt state file \(error.message); moved it to \(aside), starting empty"
          )
        }
      } catch {
        throw NotifydError(.stateFile, error.message)
      }
    }
    let server = NotifyServer(
      connection: connection, configuration: configuration, records: records)
    try await server.serve()
    return server
  }

  private func serve() async throws(NotifydError) {
    // Unique names restart from :1.0 on a new bus, so cached identities must go.
    _ = await connection.addStateObserver { [weak self] state in
      if case .connected = state { return }
      self?.state.withLock { $0.callers.removeAll() }
    }
    await connection.export(
      at: NotifydInterface.path, interface: NotifydInterface.interface,
      // A method reference, not a closure literal: it keeps `handle` nonisolated(nonsending),
      // so each call starts on the connection's thread in arrival order (a closure literal
      // is inferred @concurrent and would start on the global pool, in any order). Most
      // calls never get there: `answerAtOnce` answers them as they are dispatched. stop()
      // unexports both, which ends the reference cycle.
      introspectionXML: NotifydInterface.interfaceXML, immediately: answerAtOnce,
      handler: handle)
    do {
      let posted = MatchRule.signal(member: NotifyWire.member, path: NotifyWire.path)
      let watchPosts = try await connection.subscribe(posted) { [weak self] message in
        self?.observePost(message)
      }
      let owners = MatchRule.signal(
        interface: "org.freedesktop.DBus", member: "NameOwnerChanged", sender: .bus)
      let watchOwners = try await connection.subscribe(owners) { [weak self] message in
        self?.observeOwnerChange(message)
      }
      subscriptions.withLock { $0 = [watchPosts, watchOwners] }
    } catch {
      throw NotifydError(.bus, "cannot watch the bus: \(error.message)")
    }
    let reply: RequestNameReply
    do {
      reply = try await connection.requestName(NotifydInterface.busName, flags: [.doNotQueue])
    } catch {
      throw NotifydError(
        .nameRefused,
        "the bus refused \(NotifydInterface.busName) to this process: \(error.message)")
    }
    guard reply == .primaryOwner || reply == .alreadyOwner else {
      var owner = "another connection"
      if let unique = try? await connection.owner(of: NotifydInterface.busName) {
        owner = "\(unique)"
        if let credentials = try? await connection.credentials(of: unique),
          let pid = credentials.processID
        {
          owner += " (pid \(pid))"
        }
      }
      throw NotifydError(
        .nameTaken,
        "\(NotifydInterface.busName) is already owned by \(owner) on the bus at "
          + "\(await connection.address?.rawValue ?? "?"); is another notifyd running?")
    }
    try await startBridges()
    let address = await connection.address?.rawValue ?? "?"
    configuration.log("serving \(NotifydInterface.busName) on \(address)")
  }

  /// Writes the state file if needed, gives up the name and closes the connection.
  public func stop() async {
    stopBridges()
    await connection.unexport(at: NotifydInterface.path)
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      saveQueue.async {
        self.saveNow()
        done.resume()
      }
    }
    for subscription in subscriptions.withLock({ $0 }) { await subscription.cancel() }
    try? await connection.releaseName(NotifydInterface.busName)
    await connection.close()
  }

  // MARK: - Watching the bus

  /// Counts a `Posted` signal seen on the bus.
  ///
  /// A bridged name is handed to the bridge first, which writes its PUBLISH on this
  /// thread: the hop to the broker waits for nothing the table needs. The table records
  /// when the post was read, and may show it a moment after the bridge forwarded it.
  func observePost(_ message: Message) {
    guard let name = NotifyWire.postedName(in: message) else {
      state.withLock { $0.statistics.malformedSignals += 1 }
      return
    }
    let now = Self.realtimeNanoseconds()
    bridgePost(name, message)
    state.withLock {
      $0.table.recordPost(of: name, at: now)
      $0.statistics.postsSeen += 1
    }
  }

  /// Forgets the cached identity of a connection that left the bus.
  func observeOwnerChange(_ message: Message) {
    guard message.body.count == 3, case .string(let name) = message.body[0],
      case .string(let newOwner) = message.body[2], newOwner.isEmpty, name.hasPrefix(":")
    else { return }
    state.withLock { _ = $0.callers.removeValue(forKey: name) }
  }

  // MARK: - Persistence

  /// Writes the state file soon, once for a burst of changes.
  func scheduleSave() {
    guard configuration.store != nil else { return }
    let start = state.withLock { state -> Bool in
      state.dirty = true
      if state.saveScheduled { return false }
      state.saveScheduled = true
      return true
    }
    guard start else { return }
    let delay = configuration.saveDelay.components
    let nanoseconds = Int(delay.seconds) * 1_000_000_000 + Int(delay.attoseconds / 1_000_000_000)
    saveQueue.asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
      self?.saveNow()
    }
  }

  /// Writes the state file now if anything changed since the last write.
  ///
  /// This blocks on `fsync`: from async code, call it off the concurrency pool.
  public func saveNow() {
    guard let store = configuration.store else { return }
    writer.withLock { _ in
      let records = state.withLock { state -> [StateRecord]? in
        state.saveScheduled = false
        guard state.dirty else { return nil }
        state.dirty = false
        return state.table.stateRecords
      }
      guard let records else { return }
      do throws(NotifydFileError) {
        try store.save(records)
        state.withLock { $0.statistics.saves += 1 }
      } catch {
        state.withLock {
          $0.dirty = true
          $0.statistics.saveFailures += 1
        }
        configuration.log("cannot write the state file: \(error.message)")
      }
    }
  }

  // MARK: - Support

  /// Writes `notifyd: <line>` to standard error.
  public static let logToStandardError: @Sendable (String) -> Void = { line in
    let text = Array("notifyd: \(line)\n".utf8)
    _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
  }

  /// Nanoseconds since the epoch, `CLOCK_REALTIME`.
  public static func realtimeNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
  }
}
