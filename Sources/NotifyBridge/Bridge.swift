public import NotifyCore
import Synchronization

/// notifyd's bridges to MQTT brokers (`Protocol/bridge.md`): local posts and state of
/// bridged names go to every broker whose namespaces hold them; what the brokers send is
/// handed back to notifyd to post or restore.
///
/// One origin and one post counter serve all the brokers, so a post that reaches a host
/// through two brokers carries the same stamp both times and is delivered once.
///
/// ```swift
/// let bridge = try Bridge([configuration], host: Bridge.Host(...), context: context)
/// bridge.start()
/// bridge.post("group.example.saved")      // a local post of a bridged name
/// bridge.stop()
/// ```
public final class Bridge: Sendable {
  /// What notifyd does for the bridge.
  public struct Host: Sendable {
    /// Posts a name received from a broker on the local bus, from notifyd's own
    /// connection; calls its second argument with the post's sequence number just
    /// before the post is sent.
    ///
    /// Returns whether the post was handed to the bus: a received message whose post was
    /// not is not acknowledged, so the broker sends it again. One that was is
    /// acknowledged once the post comes back to notifyd from its bus
    /// (``Bridge/routed(sequence:connection:)``).
    public var post: @Sendable (NotifyName, (UInt64) -> Void) -> Bool
    /// Applies a state received from a broker under notifyd's restore rule (the newer
    /// set time wins).
    public var restoreState: @Sendable (NotifyName, UInt64, UInt64) -> StateOutcome
    /// The names notifyd knows, for one post each when a broker lost this bridge's
    /// session (its queued posts are gone, so any of them may have been missed).
    public var knownNames: @Sendable () -> [NotifyName]
    /// Writes a log line.
    public var log: @Sendable (String) -> Void
    /// Which of notifyd's connections to its bus is the current one (it counts them).
    public var busConnection: @Sendable () -> UInt64

    /// Creates a host.
    public init(
      post: @escaping @Sendable (NotifyName, (UInt64) -> Void) -> Bool,
      restoreState: @escaping @Sendable (NotifyName, UInt64, UInt64) -> StateOutcome,
      knownNames: @escaping @Sendable () -> [NotifyName],
      log: @escaping @Sendable (String) -> Void,
      busConnection: @escaping @Sendable () -> UInt64
    ) {
      self.post = post
      self.restoreState = restoreState
      self.knownNames = knownNames
      self.log = log
      self.busConnection = busConnection
    }
  }

  /// What applying a received state did.
  public enum StateOutcome: Sendable, Equatable {
    /// The received value is now the name's state.
    case applied
    /// The local value is as new or newer and the same; nothing to do.
    case kept
    /// The local value is newer: the bridge publishes it, so the broker's retained value
    /// catches up.
    case localIsNewer(UInt64, setTime: UInt64)
    /// notifyd has no room for the name.
    case refused
  }

  /// Facts used to derive default client identifiers.
  public struct Context: Sendable {
    public var hostName: String
    public var userID: UInt32
    public var busAddress: String

    public init(hostName: String, userID: UInt32, busAddress: String) {
      self.hostName = hostName
      self.userID = userID
      self.busAddress = busAddress
    }
  }

  /// This bridge's origin, as its messages carry it.
  public let origin: BridgeOrigin
  let links: [BrokerLink]
  let shared: Mutex<Shared>

  struct Shared {
    var sequence: UInt64 = 0
    var duplicates = DuplicateFilter()
  }

  /// Creates the clients; nothing connects before ``start()``.
  ///
  /// - Throws: ``BridgeError`` when libmosquitto refuses a setting.
  public init(_ configurations: [BridgeConfiguration], host: Host, context: Context)
    throws(BridgeError)
  {
    origin = BridgeOrigin.random()
    shared = Mutex(Shared())
    var links: [BrokerLink] = []
    for configuration in configurations {
      links.append(try BrokerLink(configuration, host: host, context: context))
    }
    self.links = links
    for link in links { link.bridge = self }
  }

  /// Starts connecting to every broker, in the background.
  public func start() {
    for link in links { link.start() }
  }

  /// Disconnects from every broker.
  public func stop() {
    for link in links { link.stop() }
  }

  /// notifyd's bus connection is back: posts what is owed to it (a broker lost this
  /// bridge's session while the bus was away).
  public func busReconnected() {
    for link in links { link.resyncIfOwed() }
  }

  /// One of notifyd's own posts came back to it from its bus.
  ///
  /// It came on bus connection `connection` (``Host/busConnection`` then): the bus has
  /// routed it and every post sent before it on that connection, so the broker messages
  /// they were made for may be acknowledged. Call it for every `Posted` signal of
  /// notifyd's own connection, with the signal's sequence number.
  public func routed(sequence: UInt64, connection: UInt64) {
    for link in links { link.routed(sequence: sequence, connection: connection) }
  }

  /// notifyd's bus connection was lost: posts made for broker messages and not
  /// confirmed yet will not be; those messages are not acknowledged (each broker
  /// connection that has some ends, and the broker sends them again).
  public func busLost() {
    for link in links { link.busLost() }
  }

  /// Publishes a local post of `name` to every broker that carries it.
  public func post(_ name: NotifyName) {
    send(name, .post)
  }

  /// Publishes a local state of `name` (retained) to every broker that carries it.
  public func setState(_ name: NotifyName, _ value: UInt64, setTime: UInt64) {
    send(name, .state(value, setTime: setTime))
  }

  /// One stamp for every broker that carries `name` (none taken when none does).
  private func send(_ name: NotifyName, _ content: BridgeMessage.Content) {
    var message: BridgeMessage?
    for link in links where link.configuration.scope.contains(name) {
      if message == nil {
        message = BridgeMessage(name: name, content: content, stamp: nextStamp())
      }
      link.send(message!)
    }
  }

  /// Each broker's counters, in configuration order.
  public var statistics: [BridgeStatistics] { links.map(\.statistics) }

  func nextStamp() -> BridgeStamp {
    BridgeStamp(
      origin: origin,
      sequence: shared.withLock {
        $0.sequence += 1
        return $0.sequence
      })
  }

  /// Whether a received post is new; repeats are dropped.
  func admit(_ stamp: BridgeStamp) -> DuplicateFilter.Verdict {
    shared.withLock { $0.duplicates.admit(stamp) }
  }

  /// Forgets an admitted stamp whose post could not be made: its redelivery is new.
  func forget(_ stamp: BridgeStamp) {
    shared.withLock { $0.duplicates.forget(stamp) }
  }
}

/// One broker's state and counters, for notifyd's `GetStatistics`.
public struct BridgeStatistics: Sendable, Equatable {
  /// The broker's URL.
  public var broker: String
  /// Whether the broker accepted the current connection and answered its subscriptions
  /// (so the bridge both publishes and receives).
  public var connected = false
  /// Messages published to the broker (posts and states).
  public var published: UInt64 = 0
  /// Posts and states received and applied.
  public var received: UInt64 = 0
  /// Messages held while the broker is away.
  public var queued = 0
  /// Messages lost: the outage queue was full, or the broker refused them (ACL).
  public var dropped: UInt64 = 0
  /// Received publishes that were malformed (topic, payload, properties, size, version)
  /// or outside the bridged namespaces.
  public var malformed: UInt64 = 0
  /// Received posts delivered already (the same stamp twice).
  public var duplicates: UInt64 = 0
  /// Received messages of this very bridge (through another path), dropped.
  public var echoes: UInt64 = 0
  /// Publishes and subscriptions the broker refused.
  public var refused: UInt64 = 0
  /// Received posts that could not be posted on the local bus, or that the bus did not
  /// confirm, so not acknowledged (the broker sends them again after a reconnection).
  public var unacknowledged: UInt64 = 0
  /// Connections made, the first one included.
  public var connections: UInt64 = 0
  /// The last problem, for people; empty when none.
  public var lastError = ""
}
