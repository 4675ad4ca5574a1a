import DBus
import Synchronization

extension NotifyCenter {
  /// Posts `name` and waits for the outcome: in mediated mode `notifyd`'s answer, so a
  /// refusal is seen; otherwise the post and a round trip to the bus.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/notAuthorized`` when `notifyd`
  ///   refuses (its message names the rule), ``NotifyStatus/serverNotFound`` when no
  ///   `notifyd` answers, ``NotifyStatus/invalidName`` for a name it rejects.
  public func postChecked(_ name: NotifyName) async throws(NotifyError) {
    guard isMediated, !name.isProcessLocal else {
      try post(name)
      try await synchronize()
      return
    }
    _ = try await callService(NotifyWire.mediatedPost(name))
  }

  /// Follows the owner of `org.notifybus.Notify1`: `NameOwnerChanged`, then
  /// `GetNameOwner` (kept unless a change arrived meanwhile).
  func trackServiceOwner() async throws(NotifyError) {
    do {
      _ = try await connection.subscribe(NotifyWire.serviceOwnerRule) { [weak self] message in
        guard message.body.count == 3, case .string(let owner) = message.body[2] else { return }
        self?.serviceOwner.withLock { $0 = (owner.isEmpty ? nil : owner, $0.generation + 1) }
      }
    } catch {
      throw NotifyError(
        .failed, "cannot watch \(NotifyWire.service): \(error.message)", cause: .bus(error))
    }
    let before = serviceOwner.withLock { $0.generation }
    let owner = try? await connection.owner(of: NotifyWire.service)
    serviceOwner.withLock { current in
      if current.generation == before { current.name = owner?.rawValue }
    }
  }

  /// Whether a signal from `sender` was sent by the current owner of `org.notifybus.Notify1`.
  func isFromService(_ sender: String?) -> Bool {
    guard let sender else { return false }
    return serviceOwner.withLock { $0.name == sender }
  }

  /// In mediated mode, the unique name of the `notifyd` whose signals are accepted.
  public var mediatingService: String? {
    serviceOwner.withLock { $0.name }
  }
}
