import DBus
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

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
    try checkUsable()
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
    try checkUsable()
    if name.isProcessLocal {
      registry.withLock { $0.localState[name] = value }
      return
    }
    let time = Self.realtimeNanoseconds()
    _ = try await callService(NotifyWire.setState(name, value))
    let firstSet = registry.withLock { registry in
      registry.lastSetState[name] = (value, time)
      defer { registry.watchesService = true }
      return !registry.watchesService
    }
    if firstSet { await watchServiceRestarts() }
  }

  /// Watches `notifyd`'s name; when a new `notifyd` takes it, tells it every state this
  /// center set (`RestoreState`, which keeps the newer value), as Darwin clients do.
  private func watchServiceRestarts() async {
    _ = try? await connection.subscribe(NotifyWire.serviceOwnerRule) { [weak self] message in
      guard message.body.count == 3, case .string(let owner) = message.body[2], !owner.isEmpty
      else { return }
      Task { await self?.restoreStates() }
    }
  }

  /// Sends `RestoreState` for every state this center set; returns how many `notifyd`
  /// applied.
  @discardableResult
  public func restoreStates() async -> Int {
    let remembered = registry.withLock { $0.lastSetState }
    var applied = 0
    for (name, entry) in remembered {
      let reply = try? await callService(
        NotifyWire.restoreState(name, entry.value, setTime: entry.setTime))
      if reply?.body.first?.boolValue == true { applied += 1 }
    }
    return applied
  }

  static func realtimeNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
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
