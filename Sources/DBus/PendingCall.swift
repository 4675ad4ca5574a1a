/// A method call made by ``BusConnection/startCall(_:timeout:)``, its reply still to come.
package struct PendingCall: Sendable {
  enum State: Sendable {
    /// Written while connected, registered for its reply.
    case sent(AwaitedReply, serial: UInt32)
    /// Not written: the connection was connecting or reconnecting. The call is made when
    /// its reply is awaited.
    case notSent(Message, timeout: Duration)
  }

  let connection: BusConnection
  let state: State

  /// Waits for the reply, which its timeout bounds.
  ///
  /// A cancellation of the waiting task does not end the wait: the call is made, and its
  /// caller is told how it went (the handoff's sender returns only once the bus has
  /// routed its doorbell, whether or not its task was cancelled).
  ///
  /// - Returns: The method's reply.
  /// - Throws: ``DBusError``: the error the peer replied with, ``DBusError/Name/noReply``
  ///   when the timeout passes, ``DBusError/Name/disconnected`` when the connection is
  ///   lost first.
  package func reply() async throws(DBusError) -> Message {
    try await reply(cancellable: false)
  }

  /// Waits for the reply; with `cancellable`, a cancellation of the waiting task ends the
  /// call with ``DBusError/Name/noReply``, as ``BusConnection/call(_:timeout:)`` does.
  func reply(cancellable: Bool) async throws(DBusError) -> Message {
    switch state {
    case .sent(let awaited, let serial):
      return try await connection.reply(awaited, serial: serial, cancellable: cancellable)
    case .notSent(let message, let timeout):
      return try await connection.callOnLoop(message, timeout: timeout)
    }
  }
}
