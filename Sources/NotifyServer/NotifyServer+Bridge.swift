import DBus
import NotifyBridge
import NotifyCore
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// What the server keeps for its MQTT bridges.
struct Bridging {
  var bridge: Bridge?
  /// The server's own unique name: `Posted` signals it sent are never published again
  /// (they are mediated posts, published when made, or posts that came from a broker);
  /// they confirm that the bus has routed the posts made for brokers.
  var ownName = ""
  /// Counts the connections to the bus, the first one included (a reconnection to a new
  /// bus may get the unique name of the connection before).
  var busConnections: UInt64 = 1
}

extension NotifyServer {
  /// Starts the bridges of the configuration, if any; they connect in the background.
  func startBridges() async throws(NotifydError) {
    guard !configuration.bridges.isEmpty else { return }
    let connection = self.connection
    // Called on the connection's thread at each change, before anything is sent or
    // received on a new connection.
    _ = await connection.addStateObserver { [weak self] state in
      guard let self else { return }
      guard case .connected(let unique) = state else {
        // What the lost connection took is confirmed by nothing now.
        self.bridging.withLock { $0.bridge }?.busLost()
        return
      }
      let bridge = self.bridging.withLock { bridging in
        bridging.busConnections += 1
        bridging.ownName = unique.rawValue
        return bridging.bridge
      }
      // After a round trip the connection takes posts (it is told it is connected just
      // before it does); the observer must not wait.
      Task {
        _ = try? await connection.flush()
        bridge?.busReconnected()
      }
    }
    var hostName = [CChar](repeating: 0, count: 256)
    gethostname(&hostName, hostName.count - 1)
    let context = Bridge.Context(
      hostName: String(
        decoding: hostName.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
      userID: getuid(),
      busAddress: await connection.address?.rawValue ?? "")
    // The name of the connection counted now: a reconnection while this waits has set a
    // newer one, which a stale read must not overwrite (notifyd's own posts would then be
    // published again and confirm nothing).
    let counted = bridging.withLock { $0.busConnections }
    let own = await connection.uniqueName?.rawValue ?? ""
    bridging.withLock { if $0.busConnections == counted { $0.ownName = own } }
    let log = configuration.log
    let host = Bridge.Host(
      post: { [weak self] name, sending in self?.postFromBridge(name, sending) ?? false },
      restoreState: { [weak self] name, value, time in
        self?.restoreFromBridge(name, value, setTime: time) ?? .refused
      },
      knownNames: { [weak self] in
        self?.state.withLock { Array($0.table.entries.keys) } ?? []
      },
      log: log,
      busConnection: { [weak self] in self?.bridging.withLock { $0.busConnections } ?? 0 })
    let bridge: Bridge
    do {
      bridge = try Bridge(configuration.bridges, host: host, context: context)
    } catch {
      throw NotifydError(.bridge, "cannot set up the bridge: \(error.message)")
    }
    bridging.withLock { $0.bridge = bridge }
    for link in configuration.bridges {
      log(
        "bridging \(link.scope.namespaces.map(\.rawValue).joined(separator: ", ")) through "
          + "\(link.broker) (topics \(link.topics.prefix)/post/…, \(link.topics.prefix)/state/…)")
    }
    bridge.start()
  }

  /// Disconnects the bridges.
  func stopBridges() {
    let bridge = bridging.withLock { slot -> Bridge? in
      defer { slot.bridge = nil }
      return slot.bridge
    }
    bridge?.stop()
  }

  /// Publishes a `Posted` signal seen on the bus, unless this server sent it; one it
  /// sent confirms that the bus has routed it and the posts sent before it.
  func bridgePost(_ name: NotifyName, _ message: Message) {
    let sender = message.sender?.rawValue
    let (bridge, own, connection) = bridging.withLock {
      ($0.bridge, $0.ownName == sender, $0.busConnections)
    }
    guard let bridge else { return }
    guard own else { return bridge.post(name) }
    if message.body.count > 1, let sequence = message.body[1].uint64Value {
      bridge.routed(sequence: sequence, connection: connection)
    }
  }

  /// Publishes a mediated post or a state change.
  func bridgeMediatedPost(_ name: NotifyName) {
    bridging.withLock { $0.bridge }?.post(name)
  }

  func bridgeState(_ name: NotifyName, _ value: UInt64, setTime: UInt64) {
    bridging.withLock { $0.bridge }?.setState(name, value, setTime: setTime)
  }

  /// Posts a name a broker sent; returns whether the post was handed to the bus.
  ///
  /// The post is made from the server's own connection, so receivers in mediated mode
  /// accept it too. `sending` gets its sequence number just before it is sent: the
  /// bridge awaits it coming back (``bridgePost(_:_:)``).
  ///
  /// Only a connection that is up at that moment takes it (`sendIfConnected`): a post
  /// kept for a reconnection would be acknowledged to the broker and lost if notifyd
  /// ended first.
  func postFromBridge(_ name: NotifyName, _ sending: (UInt64) -> Void) -> Bool {
    (try? sendPost(name, onlyIfConnected: true, sending)) != nil
  }

  /// Numbers a post of `name` and sends it from the server's connection, both holding
  /// ``posting``; `sending` gets its sequence number just before it is sent.
  ///
  /// A post not sent gives its numbers back (no post took later ones: ``posting`` is
  /// held), so receivers see no gap in the name's count (which would make them deliver
  /// every name once).
  func sendPost(
    _ name: NotifyName, onlyIfConnected: Bool, _ sending: (UInt64) -> Void = { _ in }
  ) throws(DBusError) {
    let failure = posting.withLock { _ -> DBusError? in
      // The name's interface is kept beside its count: not built again for every post.
      let (sequence, nameSequence, interface) = state.withLock { state in
        state.postSequence += 1
        let (nameSequence, interface) = state.postCounts.nextPost(of: name)
        return (state.postSequence, nameSequence, interface)
      }
      sending(sequence)
      let signal = NotifyWire.signal(
        for: name, sequence: sequence, nameSequence: nameSequence, interface: interface)
      do throws(DBusError) {
        if onlyIfConnected {
          try connection.sendIfConnected(signal)
        } else {
          try connection.send(signal)
        }
        return nil
      } catch {
        state.withLock { state in
          state.postSequence -= 1
          state.postCounts.giveBack(nameSequence, for: name)
        }
        return error
      }
    }
    if let failure { throw failure }
  }

  /// Applies a state a broker sent: the later set time wins; at the same time, the larger
  /// value, so that every host settles on the same one.
  func restoreFromBridge(_ name: NotifyName, _ value: UInt64, setTime time: UInt64)
    -> Bridge.StateOutcome
  {
    let outcome = state.withLock { state -> Bridge.StateOutcome in
      if let entry = state.table.entries[name], entry.hasState {
        if entry.setTime == time && entry.state == value { return .kept }
        if entry.setTime > time || (entry.setTime == time && entry.state > value) {
          return .localIsNewer(entry.state, setTime: entry.setTime)
        }
      }
      guard state.table.setState(value, of: name, at: time) else { return .refused }
      state.statistics.restores += 1
      return .applied
    }
    if outcome == .applied { scheduleSave() }
    return outcome
  }

  /// The status dump's lines for the bridges: one per broker.
  func bridgeStatusLines() -> [String] {
    (bridging.withLock { $0.bridge }?.statistics ?? []).map { row in
      "status: bridge \(row.broker) \(row.connected ? "connected" : "disconnected") "
        + "published \(row.published) received \(row.received) queued \(row.queued) "
        + "dropped \(row.dropped) malformed \(row.malformed) duplicates \(row.duplicates) "
        + "echoes \(row.echoes) refused \(row.refused) unacknowledged \(row.unacknowledged) "
        + "connections \(row.connections)"
    }
  }

  /// `GetStatistics`' `Bridges` entry: one dictionary per broker.
  func bridgeStatistics() -> DBusValue {
    let rows = (bridging.withLock { $0.bridge }?.statistics ?? []).map { row -> DBusValue in
      .dictionary([
        "Broker": .string(row.broker),
        "Connected": .boolean(row.connected),
        "Published": .uint64(row.published),
        "Received": .uint64(row.received),
        "Queued": .uint32(UInt32(clamping: row.queued)),
        "Dropped": .uint64(row.dropped),
        "Malformed": .uint64(row.malformed),
        "Duplicates": .uint64(row.duplicates),
        "Echoes": .uint64(row.echoes),
        "Refused": .uint64(row.refused),
        "Unacknowledged": .uint64(row.unacknowledged),
        "Connections": .uint64(row.connections),
        "LastError": .string(row.lastError),
      ])
    }
    return .array(elementType: "a{sv}", rows)
  }
}
