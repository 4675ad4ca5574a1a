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

  /// The number of distinct match rules this connection holds on the bus.
  public var matchRuleCount: Int { rules.count }

  /// Routes a received signal to the subscribers whose rules match it.
  ///
  /// Subscribers are indexed by interface, as the bus daemon indexes rules, so a signal
  /// is checked only against the rules for its interface and the rules with none.
  func deliverSignal(_ message: Message) {
    if let interface = message.interface, let ids = subscribersByInterface[interface] {
      for id in ids {
        if let subscriber = subscribers[id], subscriber.rule.matches(message) {
          subscriber.deliver(message)
        }
      }
    }
    for id in subscribersWithoutInterface {
      if let subscriber = subscribers[id], subscriber.rule.matches(message) {
        subscriber.deliver(message)
      }
    }
  }
}
