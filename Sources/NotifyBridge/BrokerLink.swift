import NotifyCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// One broker of a ``Bridge``: its client, its outage queue and its counters.
final class BrokerLink: Sendable {
  let configuration: BridgeConfiguration
  private let host: Bridge.Host
  private let state: Mutex<LinkState>
  private let client: Mutex<MosquittoClient?> = Mutex(nil)
  private let owner = Mutex(Owner())
  /// The topic of the name published last, and the name of the topic received last.
  ///
  /// A repeat is mapped by a comparison. Two locks, since notifyd's D-Bus thread
  /// publishes while the connection thread reads.
  private let sentTopics: Mutex<RecentTopics>
  private let receivedTopics: Mutex<RecentTopics>

  /// The bridge, held weakly: the bridge holds its links.
  private struct Owner {
    weak var bridge: Bridge?
  }

  struct LinkState {
    var statistics: BridgeStatistics
    var queue: OutageQueue
    /// Publishes (their topics) and the broker's answers, for refusal messages.
    var publishes = Answers<Int32>()
    /// Subscriptions (their filters) and the broker's answers.
    var subscriptions = Answers<[Int32]>()
    var everConnected = false
    /// The subscriptions of the current connection the broker has not answered yet; the
    /// link counts as connected (and publishes) once this is empty after a CONNACK.
    var unansweredSubscriptions: Set<Int32> = []
    /// A CONNACK came and its subscriptions are not all answered yet.
    var subscribing = false
    /// The last log line about the connection, so a failing broker logs once per change.
    var lastConnectionLog = ""
    var loggedOverflow = false
    /// The broker lost this bridge's session and the catch-up posts (one per bridged
    /// name) are not all made yet: they are made again at the next connection and when
    /// notifyd's bus is back.
    var resyncOwed = false
    /// The posts made for messages from the broker that the bus has not confirmed yet,
    /// in the order they were made (this link's connection thread makes them all, so in
    /// the order of their sequence numbers, too).
    var awaited: [AwaitedPost] = []
    /// The bus cannot confirm the posts awaited (its connection was lost since they were
    /// made); cleared when the broker connection ends.
    var confirmationLost = false
  }

  /// A post made for a message from the broker, until the bus confirms it.
  struct AwaitedPost {
    /// notifyd's sequence number of the post.
    var sequence: UInt64
    /// Which of notifyd's bus connections was the current one before the post.
    var connection: UInt64
    /// The message's stamp, forgotten if the post is not confirmed.
    var stamp: BridgeStamp?
    /// When it was made (`CLOCK_MONOTONIC`, nanoseconds).
    var time: UInt64
  }

  /// How long the bus has to confirm a post: `Protocol/bridge.md`, "Acknowledgements".
  static let confirmationTimeout: UInt64 = 5_000_000_000

  /// The bridge, set once after creation (for the shared origin, counter and filter).
  var bridge: Bridge? {
    get { owner.withLock { $0.bridge } }
    set { owner.withLock { $0.bridge = newValue } }
  }

  init(_ configuration: BridgeConfiguration, host: Bridge.Host, context: Bridge.Context)
    throws(BridgeError)
  {
    self.configuration = configuration
    self.host = host
    sentTopics = Mutex(RecentTopics(configuration.topics))
    receivedTopics = Mutex(RecentTopics(configuration.topics))
    state = Mutex(
      LinkState(
        statistics: BridgeStatistics(broker: configuration.broker.description),
        queue: OutageQueue(limit: configuration.queueLimit)))
    let settings = MosquittoClient.Settings(
      host: configuration.broker.host, port: Int32(configuration.broker.port),
      clientID: configuration.effectiveClientID(
        host: context.hostName, user: context.userID, bus: context.busAddress),
      user: configuration.user, password: configuration.password,
      caFile: configuration.caFile, certificateFile: configuration.certificateFile,
      keyFile: configuration.keyFile, usesTLS: configuration.broker.usesTLS,
      keepAlive: Int32(configuration.keepAliveSeconds),
      sessionExpiry: configuration.sessionExpirySeconds,
      reconnectDelay: configuration.reconnectDelay)
    let made = try MosquittoClient(
      settings, events: { [weak self] event in self?.handle(event) ?? true },
      acknowledgements: { [weak self] in self?.acknowledgements() ?? .failed })
    client.withLock { $0 = made }
    if configuration.broker.usesTLS, let notice = MosquittoClient.missingTLSPendingNotice() {
      host.log("\(name): \(notice)")
    }
  }

  private var name: String { "bridge \(configuration.broker)" }

  func start() { client.withLock { $0 }?.start() }

  func stop() {
    let stopped = client.withLock { $0 }
    stopped?.stop()
  }

  var statistics: BridgeStatistics {
    state.withLock {
      var statistics = $0.statistics
      statistics.queued = $0.queue.count
      return statistics
    }
  }

  // MARK: - Sending

  /// Publishes now when connected, else keeps the message for the reconnection.
  func send(_ message: BridgeMessage) {
    guard let client = client.withLock({ $0 }) else { return }
    if state.withLock({ $0.statistics.connected }), publish(message, with: client) { return }
    let (kept, first, connected) = state.withLock { state -> (Bool, Bool, Bool) in
      if state.queue.add(message) { return (true, false, state.statistics.connected) }
      state.statistics.dropped += 1
      defer { state.loggedOverflow = true }
      return (false, !state.loggedOverflow, state.statistics.connected)
    }
    if !kept && first {
      host.log(
        "\(name): the broker is away and \(configuration.queueLimit) names are waiting "
          + "(bridge-queue); dropping posts and states of further names until it is back")
    }
    // The connection came up between the check and the queueing, after the queue was
    // drained: send what waits now rather than at the next connection.
    if kept && connected { flush(with: client) }
  }

  /// Publishes what waits; what libmosquitto refuses waits for the next connection.
  private func flush(with client: MosquittoClient) {
    let pending = state.withLock { $0.queue.drain() }
    for message in pending where !publish(message, with: client) {
      _ = state.withLock { $0.queue.add(message) }
    }
  }

  private func publish(_ message: BridgeMessage, with client: MosquittoClient) -> Bool {
    let topic = sentTopics.withLock { $0.topic(of: message.name, kind: message.kind) }
    switch client.publish(
      topic: topic, payload: message.payload, retain: message.kind == .state,
      stamp: message.stamp)
    {
    case .success(let id):
      let early = state.withLock {
        $0.statistics.published += 1
        return $0.publishes.sent(id, topic)
      }
      if let early { answered(publishOf: topic, early) }
      return true
    case .failure:
      return false
    }
  }

  // MARK: - Events

  /// Returns `false` for a message that could not be posted on the bus (the client then
  /// does not acknowledge it).
  private func handle(_ event: MosquittoClient.Event) -> Bool {
    switch event {
    case .connected(let sessionPresent):
      connected(sessionPresent: sessionPresent)
    case .refused(let reason, let text):
      var hint = ""
      if reason == 0x86 || reason == 0x87 || reason == 0x8C {
        hint =
          configuration.user == nil
          ? "; the broker may want bridge-user and bridge-password-file (\(configuration.origin))"
          : "; check bridge-user '\(configuration.user!)' and bridge-password-file "
            + "(\(configuration.origin))"
      }
      logConnection("the broker refused the connection: \(text) (reason \(reason))\(hint)")
    case .disconnected(let text):
      // The posts not confirmed were not acknowledged: the broker's copies are new.
      let (wasConnected, stamps) = state.withLock { state -> (Bool, [BridgeStamp]) in
        let stamps = state.awaited.compactMap(\.stamp)
        state.awaited.removeAll()
        state.confirmationLost = false
        let was = state.statistics.connected
        state.statistics.connected = false
        state.subscribing = false
        state.unansweredSubscriptions.removeAll()
        return (was, stamps)
      }
      for stamp in stamps { bridge?.forget(stamp) }
      logConnection(
        wasConnected
          ? "lost the broker (\(text)); posts wait for it (up to \(configuration.queueLimit) "
            + "names), reconnecting"
          : "cannot reach the broker (\(text)); retrying")
    case .message(let topic, let payload, let properties):
      return received(topic: topic, payload: payload, properties: properties)
    case .published(let id, let reason):
      if let topic = state.withLock({ $0.publishes.answered(id, reason) }) {
        answered(publishOf: topic, reason)
      }
    case .unconfirmed:
      report(
        unacknowledged: unacknowledge(),
        "the bus did not confirm the posts just received; not acknowledged, the broker "
          + "sends them again after reconnecting")
    case .subscribed(let id, let reasons):
      if let filter = state.withLock({ $0.subscriptions.answered(id, reasons) }) {
        answered(subscriptionTo: filter, reasons)
      }
      let ready = state.withLock { state -> Bool in
        state.unansweredSubscriptions.remove(id) != nil && state.subscribing
          && state.unansweredSubscriptions.isEmpty
      }
      if ready { subscribed() }
    }
    return true
  }

  private func answered(publishOf topic: String, _ reason: Int32) {
    guard reason >= 0x80 else { return }
    let count = state.withLock { state -> UInt64 in
      state.statistics.refused += 1
      state.statistics.dropped += 1
      return state.statistics.refused
    }
    if count <= 10 || count.isMultiple(of: 1000) {
      let text = "the broker refused to take \(topic): \(MosquittoClient.reasonText(reason))"
      setLastError(text)
      host.log("\(name): \(text) (refusal \(count))")
    }
  }

  private func answered(subscriptionTo filter: String, _ reasons: [Int32]) {
    for reason in reasons where reason >= 0x80 {
      state.withLock { $0.statistics.refused += 1 }
      let text =
        "the broker refused the subscription to \(filter): \(MosquittoClient.reasonText(reason))"
      setLastError(text)
      host.log("\(name): \(text)")
    }
  }

  /// At CONNACK: subscribes, and counts as connected once every subscription is
  /// answered (``subscribed()``), so that a bridge reported connected also receives.
  private func connected(sessionPresent: Bool) {
    guard let client = client.withLock({ $0 }) else { return }
    let reconnect = state.withLock { state -> Bool in
      let again = state.everConnected
      state.everConnected = true
      state.statistics.connections += 1
      state.loggedOverflow = false
      state.subscribing = true
      state.unansweredSubscriptions.removeAll()
      return again
    }
    var filters: [String] = []
    for namespace in configuration.scope.namespaces {
      filters.append(configuration.topics.filter(namespace: namespace, kind: .post))
      filters.append(configuration.topics.filter(namespace: namespace, kind: .state))
    }
    // The SUBACKs are handled on this (the client's) thread, after this returns; `Answers`
    // still pairs an answer that came first.
    var unanswered: Set<Int32> = []
    for (id, filter) in client.subscribe(filters) {
      if let early = state.withLock({ $0.subscriptions.sent(id, filter) }) {
        answered(subscriptionTo: filter, early)
      } else {
        unanswered.insert(id)
      }
    }
    let ready = state.withLock { state -> Bool in
      state.unansweredSubscriptions = unanswered
      return unanswered.isEmpty
    }
    if reconnect && !sessionPresent {
      // The broker lost the session, and with it any posts it held for us: deliver each
      // bridged name once, as a bus restart does (Protocol/notify.md).
      state.withLock { $0.resyncOwed = true }
    }
    resyncIfOwed(lostSession: reconnect && !sessionPresent)
    if ready { subscribed() }
  }

  /// Posts every bridged name notifyd knows once, if the broker lost the session since
  /// that was last done; what the bus does not take is owed until it does.
  func resyncIfOwed(lostSession: Bool = false) {
    guard state.withLock({ $0.resyncOwed }) else { return }
    let names = host.knownNames().filter { configuration.scope.contains($0) }
    if lostSession && !names.isEmpty {
      host.log(
        "\(name): the broker lost this bridge's session; posting the \(names.count) "
          + "bridged names once, since posts may have been missed")
    }
    guard let unposted = names.firstIndex(where: { !host.post($0) { _ in } }) else {
      let owed = state.withLock { state -> Bool in
        defer { state.resyncOwed = false }
        return state.resyncOwed
      }
      if owed && !lostSession && !names.isEmpty {
        host.log(
          "\(name): posted the \(names.count) bridged names owed since the broker lost the "
            + "session")
      }
      return
    }
    host.log(
      "\(name): could not post \(names[unposted]) on the bus (\(names.count - unposted) of the "
        + "\(names.count) bridged names owed since the broker lost the session); posting them "
        + "when the bus or the broker is back")
  }

  /// Every subscription of the connection is answered: the link is connected, and what
  /// waited is published.
  private func subscribed() {
    guard let client = client.withLock({ $0 }) else { return }
    // Messages queued from now on are flushed by their sender (see send(_:)).
    let waiting = state.withLock { state -> Int in
      state.subscribing = false
      state.statistics.connected = true
      return state.queue.count
    }
    logConnection(
      "connected to the broker as \(configuration.user.map { "'\($0)'" } ?? "an anonymous user")"
        + (waiting == 0 ? "" : "; sending the \(waiting) waiting messages"))
    flush(with: client)
  }

  /// Delivers a received message; returns `false` when its post could not be handed to
  /// the bus (what is malformed, a repeat or an echo is taken, and dropped).
  private func received(topic: [UInt8], payload: [UInt8], properties: [(String, String)])
    -> Bool
  {
    let message: BridgeMessage
    do throws(BridgeError) {
      let (kind, name) = try receivedTopics.withLock { topics throws(BridgeError) in
        try topics.parse(topic)
      }
      message = try BridgeMessage.decode(
        kind: kind, name: name, payload: payload, userProperties: properties)
      guard configuration.scope.contains(message.name) else {
        throw BridgeError(.badTopic, "'\(message.name)' is outside the bridged namespaces")
      }
    } catch {
      let count = state.withLock { state -> UInt64 in
        state.statistics.malformed += 1
        return state.statistics.malformed
      }
      if count <= 10 || count.isMultiple(of: 1000) {
        let shown = String(decoding: topic.prefix(200), as: UTF8.self)
        let text = "dropped a publish on '\(shown)': \(error.message)"
        setLastError(text)
        host.log("\(name): \(text) (malformed \(count))")
      }
      return true
    }
    if let stamp = message.stamp, let bridge {
      if stamp.origin == bridge.origin {
        state.withLock { $0.statistics.echoes += 1 }
        return true
      }
      if case .post = message.content, bridge.admit(stamp) == .duplicate {
        state.withLock { $0.statistics.duplicates += 1 }
        return true
      }
    }
    switch message.content {
    case .post:
      let connection = host.busConnection()
      let stamp = message.stamp
      // Awaited from before it is sent: its confirmation can come first.
      var awaited = false
      let posted = host.post(message.name) { sequence in
        awaited = true
        let time = Self.monotonicNow()
        self.state.withLock { state in
          state.awaited.append(
            AwaitedPost(sequence: sequence, connection: connection, stamp: stamp, time: time))
        }
      }
      guard posted else {
        // Not posted: neither its stamp nor those of the posts not confirmed yet, which
        // are not acknowledged either, may make the broker's redelivery a duplicate.
        report(
          unacknowledged: awaited ? unacknowledge() : unacknowledge(also: stamp, count: 1),
          "could not post \(message.name) on the bus; not acknowledged, the broker sends it "
            + "again after reconnecting")
        return false
      }
    case .state(let value, let setTime):
      switch host.restoreState(message.name, value, setTime ?? Self.now()) {
      case .localIsNewer(let local, let time):
        // The broker's retained value is older than ours: bring it up to date.
        bridge?.setState(message.name, local, setTime: time)
      case .applied, .kept, .refused:
        break
      }
    case .cleared:
      return true
    }
    state.withLock { $0.statistics.received += 1 }
    return true
  }

  /// Whether the messages taken so far may be acknowledged: asked by the client, with
  /// its `io` held.
  private func acknowledgements() -> MosquittoClient.Acknowledgements {
    state.withLock { state in
      guard let oldest = state.awaited.first else { return .due }
      if state.confirmationLost || Self.monotonicNow() &- oldest.time > Self.confirmationTimeout {
        return .failed
      }
      return .held
    }
  }

  /// notifyd's own post `sequence` came back to it from its bus, on its bus connection
  /// `connection`: the bus has routed it, and every post made before it on that
  /// connection (it handles a connection's messages in order).
  ///
  /// Confirms the awaited posts up to it, if it is one of this link's (its posts are
  /// made by one thread, so those before it were sent before it) and they were all made
  /// on that connection; when none is left, the PUBACKs go out, from this thread.
  func routed(sequence: UInt64, connection: UInt64) {
    let confirmed = state.withLock { state -> Bool in
      guard let last = state.awaited.last, sequence <= last.sequence,
        let index = state.awaited.firstIndex(where: { $0.sequence >= sequence }),
        state.awaited[index].sequence == sequence
      else { return false }
      guard state.awaited[...index].allSatisfy({ $0.connection == connection }) else {
        return false
      }
      state.awaited.removeSubrange(...index)
      return state.awaited.isEmpty
    }
    if confirmed { client.withLock { $0 }?.acknowledge() }
  }

  /// notifyd's bus connection was lost: the posts awaited cannot be confirmed any more,
  /// so the broker connection ends before their PUBACKs are written.
  func busLost() {
    let waiting = state.withLock { state -> Bool in
      guard !state.awaited.isEmpty else { return false }
      state.confirmationLost = true
      return true
    }
    if waiting { client.withLock { $0 }?.confirmationFailed() }
  }

  /// Forgets the stamps of the posts not confirmed (and `stamp`), so that the broker's
  /// copies are posted again, and counts them (and `count` more) as unacknowledged;
  /// returns the new count.
  private func unacknowledge(also stamp: BridgeStamp? = nil, count: UInt64 = 0) -> UInt64 {
    let (stamps, total) = state.withLock { state -> ([BridgeStamp], UInt64) in
      let stamps = state.awaited.compactMap(\.stamp)
      state.statistics.unacknowledged += UInt64(state.awaited.count) + count
      state.awaited.removeAll()
      return (stamps, state.statistics.unacknowledged)
    }
    for stamp in stamps + (stamp.map { [$0] } ?? []) { bridge?.forget(stamp) }
    return total
  }

  // MARK: - Logging

  private func logConnection(_ text: String) {
    let fresh = state.withLock { state -> Bool in
      guard state.lastConnectionLog != text else { return false }
      state.lastConnectionLog = text
      return true
    }
    if !text.hasPrefix("connected") { setLastError(text) }
    if fresh { host.log("\(name): \(text)") }
  }

  /// Logs `text` with the unacknowledged total, and keeps it as the last error: the
  /// first ten times, then every thousandth (bridge.md, "Acknowledgements").
  private func report(unacknowledged count: UInt64, _ text: @autoclosure () -> String) {
    guard count <= 10 || count.isMultiple(of: 1000) else { return }
    let line = text() + " (unacknowledged \(count))"
    setLastError(line)
    host.log("\(name): \(line)")
  }

  private func setLastError(_ text: String) {
    state.withLock { $0.statistics.lastError = text }
  }

  private static func monotonicNow() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
  }

  private static func now() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
  }
}

/// Pairs what was sent (by MQTT message id) with the broker's answer, in whichever order
/// the two arrive: the answer can come on the network thread before `publish` returns.
struct Answers<Reason> {
  private var sent: [Int32: String] = [:]
  private var early: [Int32: Reason] = [:]
  /// Bounds both tables, should a broker never answer.
  private static var limit: Int { 100_000 }

  /// Records a sent packet; returns the answer if it came first.
  mutating func sent(_ id: Int32, _ description: String) -> Reason? {
    if let reason = early.removeValue(forKey: id) { return reason }
    if sent.count >= Self.limit { sent.removeAll() }
    sent[id] = description
    return nil
  }

  /// Records an answer; returns what was sent if it is known already.
  mutating func answered(_ id: Int32, _ reason: Reason) -> String? {
    if let description = sent.removeValue(forKey: id) { return description }
    if early.count >= Self.limit { early.removeAll() }
    early[id] = reason
    return nil
  }
}
