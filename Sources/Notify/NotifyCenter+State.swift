import DBus
import Synchronization

extension NotifyCenter {
  /// The 64-bit state of `name`, shared by every process on the bus; 0 until set.
  ///
  /// State lives in `notifyd` (`org.notifybus.Notify1`), started by D-Bus activation
  /// when its service file is installed. `self.` names keep their state in this
  /// process.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/serverNotFound`` when no
  ///   `notifyd` answers, ``NotifyStatus/notAuthorized`` when it refuses.
  public func state(of name: NotifyName) async throws(NotifyError) -> UInt64 {
    if name.isProcessLocal { return registry.withLock { $0.localState[name] ?? 0 } }
    let reply = try await callService(NotifyWire.getState(name))
    guard case .uint64(let value)? = reply.body.first else {
      throw NotifyError(.failed, "notifyd answered GetState without a uint64")
    }
    return value
  }

  /// Sets the 64-bit state of `name`.
  ///
  /// Setting state does not post.
  ///
  /// - Throws: As ``state(of:)``.
  public func setState(_ value: UInt64, for name: NotifyName) async throws(NotifyError) {
    if name.isProcessLocal {
      registry.withLock { $0.localState[name] = value }
      return
    }
    _ = try await callService(NotifyWire.setState(name, value))
    registry.withLock { $0.lastSetState[name] = value }
  }

  /// The state of the name a token watches.
  public func state(of token: NotifyToken) async throws(NotifyError) -> UInt64 {
    guard let name = try name(of: token) else {
      throw NotifyError(.invalidRequest, "token \(token) watches a namespace, which has no state")
    }
    return try await state(of: name)
  }

  /// Sets the state of the name a token watches.
  public func setState(_ value: UInt64, for token: NotifyToken) async throws(NotifyError) {
    guard let name = try name(of: token) else {
      throw NotifyError(.invalidRequest, "token \(token) watches a namespace, which has no state")
    }
    try await setState(value, for: name)
  }

  func callService(_ message: Message) async throws(NotifyError) -> Message {
    do {
      return try await connection.call(message, timeout: .seconds(10))
    } catch {
      throw NotifyWire.error(fromService: error)
    }
  }
}
