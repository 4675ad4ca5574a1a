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
    let reply = try await callService("GetState", [.string(name.rawValue)])
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
    _ = try await callService("SetState", [.string(name.rawValue), .uint64(value)])
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

  func callService(_ member: MemberName, _ body: [DBusValue]) async throws(NotifyError) -> Message {
    do {
      return try await connection.call(
        .methodCall(
          destination: NotifyWire.service, path: NotifyWire.path,
          interface: NotifyWire.serviceInterface, member: member, body: body),
        timeout: .seconds(10))
    } catch {
      switch error.name {
      case .serviceUnknown, .nameHasNoOwner, .noReply, .disconnected, .unknownObject,
        .unknownMethod, .unknownInterface:
        throw NotifyError(
          .serverNotFound,
          "no notifyd answers on this bus (\(NotifyWire.service)): \(error.message)")
      case .accessDenied:
        throw NotifyError(.notAuthorized, error.message)
      case .invalidArgs:
        throw NotifyError(.invalidName, error.message)
      default:
        throw NotifyError(.failed, "\(error.name.rawValue): \(error.message)")
      }
    }
  }
}
