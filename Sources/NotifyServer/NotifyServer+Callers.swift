import DBus
import Synchronization

extension NotifyServer {
  /// Waits until no earlier call of `sender` is still being handled, then marks one as
  /// under way.
  func enterQueue(_ sender: String) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
      let proceed = state.withLock { state -> Bool in
        if state.queues[sender] != nil {
          state.queues[sender]?.append(continuation)
          return false
        }
        state.queues[sender] = []
        return true
      }
      if proceed { continuation.resume() }
    }
  }

  /// Lets the next queued call of `sender` go on, or clears its queue.
  func leaveQueue(_ sender: String) {
    let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
      guard var queue = state.queues[sender] else { return nil }
      if queue.isEmpty {
        state.queues[sender] = nil
        return nil
      }
      let next = queue.removeFirst()
      state.queues[sender] = queue
      return next
    }
    next?.resume()
  }

  /// The user and groups of the connection `sender`, from the cache or the bus.
  ///
  /// - Throws: ``DBusError`` `AccessDenied` when the bus cannot say.
  func identify(_ sender: String) async throws(DBusError) -> ServerState.Caller {
    if let known = state.withLock({ $0.callers[sender] }) { return known }
    guard let name = try? BusName(sender), name.isUnique else {
      throw DBusError(.accessDenied, "the caller has no unique name, so its uid is unknown")
    }
    state.withLock { $0.statistics.callerLookups += 1 }
    let caller: ServerState.Caller
    do {
      let credentials = try await connection.credentials(of: name)
      let user: UInt32
      if let known = credentials.userID {
        user = known
      } else {
        user = try await connection.unixUser(of: name)
      }
      caller = ServerState.Caller(user: user, groups: credentials.groupIDs ?? [])
    } catch {
      throw DBusError(
        .accessDenied, "cannot learn the uid of the caller \(sender) from the bus: \(error.message)"
      )
    }
    state.withLock { $0.callers[sender] = caller }
    return caller
  }
}
