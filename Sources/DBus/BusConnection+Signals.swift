import CDBus
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// One subscriber to messages that match a rule.
///
/// A class, as is ``RuleEntry``: the connection keeps them in dictionaries sized for
/// thousands of names, where an inline `MatchRule` would cost its size in every bucket.
final class Subscriber {
  let rule: MatchRule
  let deliver: @Sendable (Message) -> Void
  let finish: (@Sendable () -> Void)?

  init(
    rule: MatchRule, deliver: @escaping @Sendable (Message) -> Void, finish: (@Sendable () -> Void)?
  ) {
    self.rule = rule
    self.deliver = deliver
    self.finish = finish
  }
}

/// A match rule registered with the bus, shared by every subscriber that uses it.
final class RuleEntry {
  var count = 1
  /// The `AddMatch` call while it is under way, for later subscribers to wait on; `nil`
  /// once the bus has accepted the rule (a finished task keeps its memory, about 1 KiB,
  /// while referenced).
  var adding: Task<Result<Void, DBusError>, Never>?

  init(adding: Task<Result<Void, DBusError>, Never>) { self.adding = adding }
}

/// A subscription made with ``BusConnection/subscribe(_:handler:)``.
///
/// Cancel it to stop delivery; the match rule is removed when its last subscription ends.
public struct SignalSubscription: Sendable {
  let connection: BusConnection
  let id: UInt64

  /// Ends the subscription.
  ///
  /// Idempotent.
  public func cancel() async {
    await connection.unsubscribe(id)
  }
}

/// The messages matching a rule, as an asynchronous sequence.
///
/// Ending the iteration (or dropping the sequence) ends the subscription. The buffer
/// keeps the newest messages when the consumer falls behind; its size is chosen when the
/// sequence is made.
public struct SignalSequence: AsyncSequence, Sendable {
  public typealias Element = Message
  let stream: AsyncStream<Message>

  public func makeAsyncIterator() -> AsyncStream<Message>.Iterator {
    stream.makeAsyncIterator()
  }
}

extension BusConnection {
  /// Calls `handler` for every message that matches `rule`.
  ///
  /// The rule is added to the bus with `AddMatch` (once per distinct rule however many
  /// subscribers share it), and this returns once the bus has accepted it: any matching
  /// message sent after that is delivered.
  ///
  /// - Important: `handler` runs on the connection's event-loop thread, in the order
  ///   messages arrived. It must return quickly; hand slow work to another task.
  /// - Throws: ``DBusError`` when the rule is invalid or the bus refuses it.
  public func subscribe(
    _ rule: MatchRule, handler: @escaping @Sendable (Message) -> Void
  ) async throws(DBusError) -> SignalSubscription {
    try await addSubscriber(Subscriber(rule: rule, deliver: handler, finish: nil))
  }

  /// The messages that match `rule`, as an asynchronous sequence.
  ///
  /// - Parameters:
  ///   - rule: What to receive.
  ///   - bufferSize: How many undelivered messages to keep; older ones are dropped when
  ///     the consumer falls behind.
  /// - Throws: ``DBusError`` when the rule is invalid or the bus refuses it.
  public func signals(matching rule: MatchRule, bufferSize: Int = 4096) async throws(DBusError)
    -> SignalSequence
  {
    let (stream, continuation) = AsyncStream.makeStream(
      of: Message.self, bufferingPolicy: .bufferingNewest(bufferSize))
    let subscription = try await addSubscriber(
      Subscriber(
        rule: rule, deliver: { continuation.yield($0) }, finish: { continuation.finish() }))
    continuation.onTermination = { _ in Task { await subscription.cancel() } }
    return SignalSequence(stream: stream)
  }

  private func addSubscriber(_ subscriber: Subscriber) async throws(DBusError)
    -> SignalSubscription
  {
    try subscriber.rule.validate()
    guard !isClosed else { throw DBusError(.disconnected, "the connection is closed") }
    let id = nextIdentifier
    nextIdentifier += 1
    subscribers[id] = subscriber
    if let interface = subscriber.rule.interface {
      subscribersByInterface[interface, default: InlineList()].append(id)
    } else {
      subscribersWithoutInterface.append(id)
    }
    let result = await retainRule(subscriber.rule.description)
    if case .failure(let error) = result {
      unsubscribe(id)
      throw error
    }
    return SignalSubscription(connection: self, id: id)
  }

  private func retainRule(_ rule: String) async -> Result<Void, DBusError> {
    if let entry = rules[rule] {
      entry.count += 1
      return await entry.adding?.value ?? .success(())
    }
    let added = Task { () -> Result<Void, DBusError> in
      do throws(DBusError) {
        _ = try await self.call(self.busMethod("AddMatch", [.string(rule)]))
        return .success(())
      } catch {
        return .failure(error)
      }
    }
    let entry = RuleEntry(adding: added)
    rules[rule] = entry
    // On failure each subscriber waiting here unsubscribes, which drops the entry, so a
    // later subscriber tries again.
    let result = await added.value
    if case .success = result { entry.adding = nil }
    return result
  }

  /// Ends subscription `id`, removing its rule from the bus when it was the last user.
  func unsubscribe(_ id: UInt64) {
    guard let subscriber = subscribers.removeValue(forKey: id) else { return }
    if let interface = subscriber.rule.interface {
      subscribersByInterface[interface]?.removeAll(id)
      if subscribersByInterface[interface]?.isEmpty == true {
        subscribersByInterface[interface] = nil
      }
    } else {
      subscribersWithoutInterface.removeAll { $0 == id }
    }
    subscriber.finish?()
    let ruleText = subscriber.rule.description
    guard let entry = rules[ruleText] else { return }
    entry.count -= 1
    guard entry.count == 0 else { return }
    rules[ruleText] = nil
    if raw != nil {
      var message = busMethod("RemoveMatch", [.string(ruleText)])
      message.noReplyExpected = true
      try? send(message)
    }
  }

  /// Runs `body` on the connection's thread once the messages it has read so far are
  /// handled.
  ///
  /// Called from a signal handler, `body` runs right after the current batch: the
  /// messages one read from the socket brought, up to a few hundred, before the
  /// connection waits for more. A handler can so gather what a burst of signals asks
  /// for and act on it once (one hop to another queue, not one per signal). Called from
  /// elsewhere, `body` runs after the work already queued for the connection.
  ///
  /// `body` must not block: it runs on the connection's event loop.
  public nonisolated func afterDispatch(_ body: @escaping @Sendable () -> Void) {
    loop.afterDispatch(body)
  }

  /// Whether the calling thread is the connection's own thread, where its handlers run.
  public nonisolated var isOnConnectionThread: Bool { loop.inLoop }

  /// The number of match rules this connection holds on the bus: its distinct
  /// subscription rules and the rules of its rule sets.
  public var matchRuleCount: Int {
    ruleSets.reduce(rules.count) { $0 + $1.count }
  }

  /// Routes a signal libdbus received to the subscribers whose rules match it.
  ///
  /// Subscribers are indexed by interface, as the bus daemon indexes rules, so a signal
  /// is checked only against the rules for its interface and the rules with none; a rule
  /// set is checked with one lookup of the interface and its template.
  ///
  /// The signal is read into a ``Message`` only when a handler that takes one may match
  /// (a subscription for its interface or for none, a rule set of messages holding its
  /// interface), once for all of them; a rule set with an in-place handler reads only
  /// what it asks for (``ReceivedSignal``).
  ///
  /// The message's arguments go into ``receivedArguments``' storage, which the next signal
  /// reuses once the handlers have let go of this one (see
  /// ``MessageCoding/decode(_:strings:body:)``); storage grown past a few arguments is
  /// let go.
  ///
  /// Written without closures over the connection's state: such a closure is isolated to
  /// the connection, and one passed to the standard library (`Optional.map`, `contains`)
  /// checks that it runs on the connection's executor each time it is called
  /// (`swift_task_isCurrentExecutor`), a runtime call per signal.
  func deliverSignal(_ raw: OpaquePointer) {
    var interface: InterfaceName?
    if let text = dbus_message_get_interface(raw) {
      interface = InterfaceName(unchecked: decodedStrings.string(text))
    }
    // Not hashed when nothing subscribed by interface (a dictionary lookup hashes first).
    var subscribed: InlineList<UInt64>?
    if let interface, !subscribersByInterface.isEmpty {
      subscribed = subscribersByInterface[interface]
    }
    var needsMessage = subscribed != nil || !subscribersWithoutInterface.isEmpty
    if !needsMessage, let interface {
      for set in ruleSets where set.deliver != nil && set.contains(interface) {
        needsMessage = true
        break
      }
    }
    guard needsMessage else {
      if let interface { deliverToRuleSets(raw, interface: interface, message: nil) }
      return
    }
    route(
      MessageCoding.decode(raw, strings: &decodedStrings, body: &receivedArguments), raw,
      interface: interface, subscribed: subscribed)
    // The message is gone unless a handler kept it: free what its arguments hold now,
    // not when the next signal comes.
    receivedArguments.removeAll(keepingCapacity: receivedArguments.capacity <= 8)
  }

  private func route(
    _ message: Message, _ raw: OpaquePointer, interface: InterfaceName?,
    subscribed: InlineList<UInt64>?
  ) {
    if let interface {
      if let subscribed {
        for id in subscribed {
          if let subscriber = subscribers[id], subscriber.rule.matches(message) {
            subscriber.deliver(message)
          }
        }
      }
      deliverToRuleSets(raw, interface: interface, message: message)
    }
    for id in subscribersWithoutInterface {
      if let subscriber = subscribers[id], subscriber.rule.matches(message) {
        subscriber.deliver(message)
      }
    }
  }

  /// Delivers a signal to the rule sets that hold its interface and whose template it
  /// matches: in place, or as `message` (read by then) to a set whose handler takes one.
  private func deliverToRuleSets(
    _ raw: OpaquePointer, interface: InterfaceName, message: Message?
  ) {
    for set in ruleSets where set.contains(interface) {
      if let deliverInPlace = set.deliverInPlace {
        let matches = set.templateMatches(raw) {
          message ?? MessageCoding.decode(raw, strings: &decodedStrings)
        }
        guard matches else { continue }
        // The handler runs user code (Notify's connection-thread handlers): the cache is
        // lent to it out of the actor's property, so that no exclusive access to that
        // property spans code that might come back to the connection.
        // The signal carries the interface already read: the handler need not look it up
        // in the cache again.
        var strings = StringCache(capacity: 0)
        swap(&strings, &decodedStrings)
        withUnsafeMutablePointer(to: &strings) {
          deliverInPlace(ReceivedSignal(raw: raw, interface: interface, strings: $0))
        }
        swap(&strings, &decodedStrings)
      } else if let deliver = set.deliver, let message, set.template.matches(message) {
        deliver(message)
      }
    }
  }
}

// MARK: - Rule sets

/// Match rules of one shape that differ only in their interface, whose signals all go to
/// one handler: the compact form of many subscriptions for a subscriber that watches
/// thousands of interfaces (the Notify layer holds one rule per name).
///
/// ```swift
/// let posts = connection.ruleSet(
///   .signal(member: "Posted", path: "/org/notifybus/Notify1"),
///   interfacePrefix: "org.notifybus.Notify1.N.") { message in
///   print(message.interface!)
/// }
/// try await posts.add(interfaceSuffix: "group.example.saved")
/// ```
///
/// Each interface costs the set one small entry: the part of the interface after the
/// set's prefix (a string the caller may already hold, which the entry then shares), a
/// count, and a hash to find it by. A subscription made with
/// ``BusConnection/subscribe(_:handler:)`` keeps a rule, its text, a handler and an index
/// entry of its own. The rules' text is rendered only to talk to the bus.
///
/// The handler runs on the connection's thread for every signal that matches one of the
/// set's rules (the template with one of its interfaces), once per signal, in arrival order,
/// and not for a signal that matches none.
public struct SignalRuleSet: Sendable {
  /// The connection the rules are on.
  public let connection: BusConnection
  /// What every interface of the set starts with.
  public let interfacePrefix: String
  let id: UInt64
  let template: MatchRule
  /// The handler: one that takes a message, or one that reads the signal in place.
  let handler: (@Sendable (Message) -> Void)?
  let inPlaceHandler: (@Sendable (borrowing ReceivedSignal) -> Void)?

  /// The rule the set holds for `interface`.
  public func rule(for interface: InterfaceName) -> MatchRule {
    var rule = template
    rule.interface = interface
    return rule
  }

  /// Adds the rule for `interface`, and returns once the bus has accepted it: any matching
  /// message sent after that reaches the handler.
  ///
  /// Adding an interface the set holds counts one more use; each ``remove(_:)`` undoes one.
  ///
  /// - Throws: ``DBusError`` when the interface does not start with ``interfacePrefix``,
  ///   the rule is invalid, the connection is closed or the bus refuses it.
  public func add(_ interface: InterfaceName) async throws(DBusError) {
    try await add(interfaceSuffix: try suffix(of: interface))
  }

  /// Adds the rule for the interface ``interfacePrefix`` + `suffix`, as ``add(_:)``; the
  /// set keeps `suffix` itself, sharing its storage.
  ///
  /// - Throws: As ``add(_:)``, and ``DBusError/Name/invalidArgs`` when the two do not make
  ///   a valid interface name.
  public func add(interfaceSuffix suffix: String) async throws(DBusError) {
    guard InterfaceName.isValid(interfacePrefix + suffix) else {
      throw DBusError(.invalidArgs, "'\(interfacePrefix + suffix)' is not a valid interface name")
    }
    // A closed connection's loop has ended: answer without it.
    guard !connection.closed.load(ordering: .acquiring) else {
      throw DBusError(.disconnected, "the connection is closed")
    }
    try await connection.addToRuleSet(self, suffix)
  }

  /// Removes one use of `interface`'s rule; the last removes it from the bus.
  ///
  /// Once this returns the handler sees no signal that only this rule matched.
  public func remove(_ interface: InterfaceName) async {
    guard let suffix = try? suffix(of: interface) else { return }
    await remove(interfaceSuffix: suffix)
  }

  /// Removes one use of the rule for ``interfacePrefix`` + `suffix`, as ``remove(_:)``.
  public func remove(interfaceSuffix suffix: String) async {
    guard !connection.closed.load(ordering: .acquiring) else { return }
    await connection.removeFromRuleSet(self, suffix)
  }

  /// Removes every rule of the set.
  ///
  /// Idempotent; the set can be used again afterwards.
  public func cancel() async {
    guard !connection.closed.load(ordering: .acquiring) else { return }
    await connection.cancelRuleSet(id)
  }

  private func suffix(of interface: InterfaceName) throws(DBusError) -> String {
    guard interface.rawValue.utf8.starts(with: interfacePrefix.utf8) else {
      throw DBusError(
        .invalidArgs, "interface '\(interface)' does not start with '\(interfacePrefix)'")
    }
    return String(
      decoding: interface.rawValue.utf8.dropFirst(interfacePrefix.utf8.count), as: UTF8.self)
  }
}

/// The interfaces of one ``SignalRuleSet`` and the uses of each: what a connection keeps
/// per rule of a set.
final class RuleSetState {
  let id: UInt64
  let template: MatchRule
  let prefix: String
  /// ``prefix``'s UTF-8, to compare received interfaces with.
  private let prefixBytes: [UInt8]
  /// The handler, which takes a message, or ``deliverInPlace``, which reads the signal in
  /// place: one of the two is set.
  let deliver: (@Sendable (Message) -> Void)?
  let deliverInPlace: (@Sendable (borrowing ReceivedSignal) -> Void)?
  /// The template's type, member and path (its UTF-8), when it names nothing else to
  /// compare: a signal is then matched without reading it into a message.
  let templateInPlace: (type: CInt?, member: [UInt8]?, path: [UInt8]?)?
  /// The interfaces by a hash of their suffix; the entry keeps the suffix to compare.
  private var byHash: [UInt64: Entry] = [:]
  /// Interfaces whose hash another one has, by suffix: almost always empty.
  private var collided: [String: Entry] = [:]

  struct Entry {
    let suffix: String
    var member: Member
  }

  /// One interface's rule: its count of uses.
  struct Member {
    var count: UInt32 = 1
  }

  /// The `AddMatch` calls under way, by suffix, for later users to wait on: apart from
  /// the entries, which stay small.
  var adding: [String: Task<Result<Void, DBusError>, Never>] = [:]

  init(
    id: UInt64, template: MatchRule, prefix: String, deliver: (@Sendable (Message) -> Void)?,
    deliverInPlace: (@Sendable (borrowing ReceivedSignal) -> Void)?
  ) {
    self.id = id
    self.template = template
    self.prefix = prefix
    self.prefixBytes = Array(prefix.utf8)
    self.deliver = deliver
    self.deliverInPlace = deliverInPlace
    if template.sender == nil, template.pathNamespace == nil, template.destination == nil,
      template.arguments.isEmpty, template.argumentPaths.isEmpty, template.arg0Namespace == nil
    {
      let type: CInt? = template.type.map {
        switch $0 {
        case .methodCall: DBUS_MESSAGE_TYPE_METHOD_CALL
        case .methodReturn: DBUS_MESSAGE_TYPE_METHOD_RETURN
        case .error: DBUS_MESSAGE_TYPE_ERROR
        case .signal: DBUS_MESSAGE_TYPE_SIGNAL
        }
      }
      templateInPlace = (
        type, template.member.map { Array($0.rawValue.utf8) },
        template.path.map { Array($0.rawValue.utf8) }
      )
    } else {
      templateInPlace = nil
    }
  }

  var count: Int { byHash.count + collided.count }

  /// Every interface's suffix.
  var suffixes: [String] { byHash.values.map(\.suffix) + collided.keys }

  subscript(suffix: String) -> Member? {
    get {
      if let entry = byHash[Self.hash(suffix.utf8)], entry.suffix == suffix { return entry.member }
      return collided.isEmpty ? nil : collided[suffix]?.member
    }
    set {
      let hash = Self.hash(suffix.utf8)
      if let entry = byHash[hash], entry.suffix != suffix {
        collided[suffix] = newValue.map { Entry(suffix: suffix, member: $0) }
      } else if let newValue {
        byHash[hash] = Entry(suffix: byHash[hash]?.suffix ?? suffix, member: newValue)
      } else {
        byHash[hash] = nil
        // A collided interface moves into the freed place.
        if let moved = collided.first(where: { Self.hash($0.key.utf8) == hash }) {
          collided[moved.key] = nil
          byHash[hash] = moved.value
        }
      }
    }
  }

  /// Whether a received signal matches the template (its interface aside, which
  /// ``contains(_:)`` checks), read in place when the template names only the message's
  /// type, member and path, as a rule set's template usually does; otherwise on the
  /// signal read into a message by `message`.
  func templateMatches(_ raw: OpaquePointer, orElse message: () -> Message) -> Bool {
    guard let inPlace = templateInPlace else { return template.matches(message()) }
    if let type = inPlace.type, dbus_message_get_type(raw) != type { return false }
    if let member = inPlace.member, !Self.isString(dbus_message_get_member(raw), member) {
      return false
    }
    if let path = inPlace.path, !Self.isString(dbus_message_get_path(raw), path) {
      return false
    }
    return true
  }

  private static func isString(_ text: UnsafePointer<CChar>?, _ bytes: [UInt8]) -> Bool {
    guard let text else { return false }
    return bytes.withUnsafeBufferPointer { expected in
      strlen(text) == expected.count && memcmp(text, expected.baseAddress!, expected.count) == 0
    }
  }

  /// Whether a received signal's interface is one of the set's, without allocating.
  ///
  /// Over the interface's bytes in place (its storage is contiguous: it was made from a
  /// C string), so the prefix, the hash and the comparison are loops over memory.
  func contains(_ interface: InterfaceName) -> Bool {
    interface.rawValue.utf8.withContiguousStorageIfAvailable { contains(bytes: $0) }
      ?? contains(bytes: Array(interface.rawValue.utf8))
  }

  private func contains(bytes text: UnsafeBufferPointer<UInt8>) -> Bool {
    let prefixLength = prefixBytes.count
    guard text.count >= prefixLength,
      prefixBytes.withUnsafeBufferPointer({
        Self.sameBytes(UnsafeBufferPointer(rebasing: text[..<prefixLength]), $0)
      })
    else { return false }
    let rest = UnsafeBufferPointer(rebasing: text[prefixLength...])
    if let entry = byHash[Self.hash(rest)],
      entry.suffix.utf8.withContiguousStorageIfAvailable({ Self.sameBytes($0, rest) })
        ?? entry.suffix.utf8.elementsEqual(rest)
    {
      return true
    }
    return !collided.isEmpty && collided[String(decoding: rest, as: UTF8.self)] != nil
  }

  private func contains(bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBufferPointer { contains(bytes: $0) }
  }

  /// The text of the rule for `suffix`, for the bus.
  func ruleText(for suffix: String) -> String {
    var rule = template
    rule.interface = InterfaceName(unchecked: prefix + suffix)
    return rule.description
  }

  /// Whether two buffers hold the same bytes: one `memcmp` (the generic `elementsEqual`
  /// compares a byte at a time).
  private static func sameBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>)
    -> Bool
  {
    a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
  }

  /// 64-bit FNV-1a.
  private static func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
    return hash
  }
}

extension BusConnection {
  private static let lastRuleSet = Atomic<UInt64>(0)

  /// A set of rules, initially empty, made of `template` with each interface added to it;
  /// `handler` receives every signal any of them matches.
  ///
  /// - Parameter interfacePrefix: What every interface of the set starts with; the set
  ///   stores only the rest of each.
  /// - Important: `handler` runs on the connection's event-loop thread, in the order
  ///   messages arrived. It must return quickly.
  /// - Precondition: `template` names no interface.
  public nonisolated func ruleSet(
    _ template: MatchRule, interfacePrefix: String = "",
    handler: @escaping @Sendable (Message) -> Void
  ) -> SignalRuleSet {
    precondition(template.interface == nil, "a rule set's template names no interface")
    return SignalRuleSet(
      connection: self, interfacePrefix: interfacePrefix,
      id: Self.lastRuleSet.add(1, ordering: .relaxed).newValue, template: template,
      handler: handler, inPlaceHandler: nil)
  }

  /// A set of rules as ``ruleSet(_:interfacePrefix:handler:)`` makes, whose handler reads
  /// each signal in place: only the fields and arguments it asks for are read, and no
  /// ``Message`` is made (``ReceivedSignal/message`` makes one when it must keep it).
  ///
  /// For a handler that receives many signals and keeps none, which so costs no
  /// allocation per signal. The template's type, member and path are compared in place
  /// too.
  ///
  /// - Important: `handler` runs on the connection's event-loop thread, in the order
  ///   messages arrived. It must return quickly.
  /// - Precondition: `template` names no interface.
  ///
  /// A closure whose parameter type is not written picks the other form, which takes a
  /// ``Message``.
  @_disfavoredOverload
  public nonisolated func ruleSet(
    _ template: MatchRule, interfacePrefix: String = "",
    inPlace handler: @escaping @Sendable (borrowing ReceivedSignal) -> Void
  ) -> SignalRuleSet {
    precondition(template.interface == nil, "a rule set's template names no interface")
    return SignalRuleSet(
      connection: self, interfacePrefix: interfacePrefix,
      id: Self.lastRuleSet.add(1, ordering: .relaxed).newValue, template: template,
      handler: nil, inPlaceHandler: handler)
  }

  func addToRuleSet(_ set: SignalRuleSet, _ suffix: String) async throws(DBusError) {
    guard !isClosed else { throw DBusError(.disconnected, "the connection is closed") }
    let state: RuleSetState
    if let existing = ruleSets.first(where: { $0.id == set.id }) {
      state = existing
    } else {
      try set.template.validate()
      state = RuleSetState(
        id: set.id, template: set.template, prefix: set.interfacePrefix, deliver: set.handler,
        deliverInPlace: set.inPlaceHandler)
      ruleSets.append(state)
    }
    if let member = state[suffix] {
      state[suffix]?.count = member.count + 1
      guard let adding = state.adding[suffix] else { return }
      if case .failure(let error) = await adding.value {
        removeFromRuleSet(set, suffix)
        throw error
      }
      return
    }
    let text = state.ruleText(for: suffix)
    if text.utf8.count > MatchRule.maximumLength {
      try set.rule(for: InterfaceName(unchecked: set.interfacePrefix + suffix)).validate()
    }
    let adding = Task { () -> Result<Void, DBusError> in
      do throws(DBusError) {
        _ = try await self.call(self.busMethod("AddMatch", [.string(text)]))
        return .success(())
      } catch {
        return .failure(error)
      }
    }
    state[suffix] = RuleSetState.Member()
    state.adding[suffix] = adding
    let result = await adding.value
    // A remove, and another add, may have come meanwhile.
    if state.adding[suffix] == adding { state.adding[suffix] = nil }
    switch result {
    case .success:
      break
    case .failure(let error):
      // Each user waiting here removes its use, which drops the entry, so a later add
      // tries again.
      removeFromRuleSet(set, suffix)
      throw error
    }
  }

  func removeFromRuleSet(_ set: SignalRuleSet, _ suffix: String) {
    guard let state = ruleSets.first(where: { $0.id == set.id }), let member = state[suffix]
    else { return }
    guard member.count == 1 else {
      state[suffix]?.count = member.count - 1
      return
    }
    state[suffix] = nil
    // The rule was added (or its AddMatch is under way, and the bus handles this
    // connection's messages in order): remove it.
    removeMatch(state.ruleText(for: suffix))
  }

  func cancelRuleSet(_ id: UInt64) {
    guard let index = ruleSets.firstIndex(where: { $0.id == id }) else { return }
    let state = ruleSets.remove(at: index)
    for suffix in state.suffixes { removeMatch(state.ruleText(for: suffix)) }
  }

  private func removeMatch(_ text: String) {
    guard raw != nil else { return }
    var message = busMethod("RemoveMatch", [.string(text)])
    message.noReplyExpected = true
    try? send(message)
  }

  /// The text of every rule the rule sets hold, to add again after a reconnect.
  var ruleSetTexts: [String] {
    ruleSets.flatMap { state in state.suffixes.map { state.ruleText(for: $0) } }
  }
}

// MARK: - Signals read in place

/// A received signal, lent to a rule set's in-place handler
/// (``BusConnection/ruleSet(_:interfacePrefix:inPlace:)``) for the length of the call.
///
/// Its fields and arguments are read from libdbus's message when asked for, each string
/// through the connection's cache of recent strings, so a handler that reads a few of
/// them makes no ``Message`` and allocates nothing for a signal like the last. It cannot
/// be copied or kept; ``message`` makes a ``Message`` to keep.
public struct ReceivedSignal: ~Copyable {
  // Both valid only during the handler's call, on the connection's thread.
  private let raw: OpaquePointer
  private let strings: UnsafeMutablePointer<StringCache>

  /// The interface of the signal.
  ///
  /// Read once by the connection, which routes by it.
  public let interface: InterfaceName?

  init(raw: OpaquePointer, interface: InterfaceName?, strings: UnsafeMutablePointer<StringCache>) {
    self.raw = raw
    self.interface = interface
    self.strings = strings
  }

  /// The unique name of the sending connection, filled in by the bus.
  public var sender: BusName? {
    dbus_message_get_sender(raw).map { BusName(unchecked: strings.pointee.string($0)) }
  }

  /// The object the signal is from.
  public var path: ObjectPath? {
    dbus_message_get_path(raw).map { ObjectPath(unchecked: strings.pointee.string($0)) }
  }

  /// The signal's name.
  public var member: MemberName? {
    dbus_message_get_member(raw).map { MemberName(unchecked: strings.pointee.string($0)) }
  }

  /// The whole signal as a message, to keep.
  public var message: Message { MessageCoding.decode(raw, strings: &strings.pointee) }

  /// Reads the arguments, from the first, with `body`.
  public func arguments<Result>(_ body: (inout SignalArguments) -> Result) -> Result {
    var arguments = SignalArguments(raw: raw, strings: strings)
    return body(&arguments)
  }
}

/// The arguments of a ``ReceivedSignal``, read one at a time.
public struct SignalArguments: ~Copyable {
  private var iterator = DBusMessageIter()
  private var atEnd: Bool
  private let strings: UnsafeMutablePointer<StringCache>

  init(raw: OpaquePointer, strings: UnsafeMutablePointer<StringCache>) {
    self.strings = strings
    atEnd = false
    atEnd = dbus_message_iter_init(raw, &iterator) == 0
  }

  /// The next argument, or `nil` after the last.
  public mutating func next() -> DBusValue? {
    guard !atEnd, dbus_message_iter_get_arg_type(&iterator) != CDBus_TYPE_INVALID else {
      return nil
    }
    let value = MessageCoding.read(&iterator, &strings.pointee)
    atEnd = dbus_message_iter_next(&iterator) == 0
    return value
  }
}
