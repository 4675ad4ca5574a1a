public import DBus
import Synchronization

/// Watches notifyd's connection: logs every loss of the bus and every reconnect, and, for a
/// notifyd the bus started (D-Bus activation), notices when the bus was replaced.
///
/// An activated notifyd was given its bus's address with the bus's `guid`
/// (`DBUS_STARTER_ADDRESS`). When that bus goes away and another `dbus-daemon` answers at
/// the same socket (the embedded bus restarted), the old address can never be reached
/// again, and the new bus starts its own notifyd on demand: so the watch calls
/// `replaced` once, and notifyd writes its state and exits. The same holds when nothing
/// answers at the address for ``goneAfter`` (the bus is gone for good: a `dbus-daemon`'s
/// `guid` is new on every start, so the old bus never comes back). A notifyd given `--bus`
/// keeps reconnecting instead (`replaced` is `nil`).
public final class BusWatch: Sendable {
  private struct Progress {
    var lostAt: ContinuousClock.Instant?
    var probe: Task<Void, Never>?
    var reported = false
  }

  private let progress = Mutex(Progress())
  private let log: @Sendable (String) -> Void
  private let replaced: (@Sendable (String) -> Void)?
  /// The bus's `guid` from the activation address.
  private let expectedGUID: String?
  /// The address without its `guid`, to ask whoever answers there now.
  private let probeAddress: BusAddress?

  /// How long an activated notifyd waits with nothing answering at its bus's address
  /// before it takes the bus to be gone for good.
  public static let goneAfter: Duration = .seconds(5)

  /// Starts watching `connection`.
  ///
  /// - Parameters:
  ///   - starterAddress: The address the activating bus gave (`DBUS_STARTER_ADDRESS`), or
  ///     `nil` when notifyd was not activated or was given `--bus`.
  ///   - log: Where the lines go.
  ///   - replaced: Called once, with a line for the log, when a bus with another `guid`
  ///     answers at `starterAddress`.
  public init(
    _ connection: BusConnection, starterAddress: BusAddress?,
    log: @escaping @Sendable (String) -> Void,
    replaced: (@Sendable (String) -> Void)?
  ) async {
    self.log = log
    self.replaced = replaced
    expectedGUID = starterAddress.flatMap(Self.guid(in:))
    probeAddress = starterAddress.flatMap(Self.withoutGUID)
    let address = await connection.address?.rawValue ?? connection.bus.description
    _ = await connection.addStateObserver { [weak self] state in
      self?.changed(to: state, address: address)
    }
  }

  deinit {
    progress.withLock { $0.probe?.cancel() }
  }

  private func changed(to state: BusConnection.State, address: String) {
    switch state {
    case .reconnecting(let attempt):
      let first = progress.withLock { progress -> Bool in
        guard progress.lostAt == nil else { return false }
        progress.lostAt = .now
        return true
      }
      guard first else { return }
      log("lost the bus at \(address); reconnecting (attempt \(attempt))")
      startProbe()
    case .connected(let uniqueName):
      let lostAt = progress.withLock { progress -> ContinuousClock.Instant? in
        defer {
          progress.lostAt = nil
          progress.probe?.cancel()
          progress.probe = nil
        }
        return progress.lostAt
      }
      guard let lostAt else { return }
      let elapsed = (ContinuousClock.now - lostAt).components
      let milliseconds = elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000
      log("reconnected to the bus at \(address) as \(uniqueName) after \(milliseconds) ms")
    case .connecting, .closed:
      break
    }
  }

  /// Asks, every 250 ms until the connection is back, which bus answers at the address.
  private func startProbe() {
    guard let replaced, let expectedGUID, let probeAddress else { return }
    let task = Task.detached { [weak self] in
      var silentSince: ContinuousClock.Instant?
      while !Task.isCancelled {
        try? await Task.sleep(for: .milliseconds(250))
        guard let self, !Task.isCancelled else { return }
        let line: String
        if let answering = Self.busID(at: probeAddress) {
          silentSince = nil
          guard answering != expectedGUID else { continue }
          line =
            "the bus at \(probeAddress) was replaced (guid \(expectedGUID), now \(answering)); "
            + "exiting, as the new bus starts its own notifyd"
        } else {
          let since = silentSince ?? .now
          silentSince = since
          guard ContinuousClock.now - since >= Self.goneAfter else { continue }
          line =
            "the bus at \(probeAddress) (guid \(expectedGUID)) is gone: nothing has answered "
            + "there for \(Self.goneAfter); exiting, as the next bus starts its own notifyd"
        }
        let first = self.progress.withLock { progress -> Bool in
          defer { progress.reported = true }
          return !progress.reported
        }
        if first { replaced(line) }
        return
      }
    }
    progress.withLock { $0.probe = task }
  }

  /// The `guid` of the bus answering at `address`, or `nil` when none answers.
  static func busID(at address: BusAddress) -> String? {
    do throws(DBusError) {
      let connection = try OneShotConnection(to: .address(address))
      try connection.flush(timeoutMilliseconds: 2000)
      return connection.serverGUID
    } catch {
      return nil
    }
  }

  /// The `guid` key of an address's first entry that has one.
  static func guid(in address: BusAddress) -> String? {
    address.entries.lazy.compactMap { $0["guid"] }.first
  }

  /// `address` with every `guid` key removed, or `nil` if nothing remains.
  static func withoutGUID(_ address: BusAddress) -> BusAddress? {
    let entries = address.rawValue.split(separator: ";").map { entry -> String in
      guard let colon = entry.firstIndex(of: ":") else { return String(entry) }
      let keys = entry[entry.index(after: colon)...].split(separator: ",").filter {
        !$0.hasPrefix("guid=")
      }
      return entry[...colon] + keys.joined(separator: ",")
    }
    return try? BusAddress(entries.joined(separator: ";"))
  }
}
