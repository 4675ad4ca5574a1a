import CDBus

/// A blocking connection for short single-threaded programs, such as `notify-post`: no
/// event-loop thread and no concurrency runtime, so a process that posts and exits starts
/// and ends as fast as a C client.
///
/// It uses libdbus's blocking calls (`dbus_bus_register`, `send_with_reply_and_block`,
/// `flush`). Those reorder the messages a connection receives, which is why the library
/// path never uses them; a one-shot sender reads nothing else, so the rule does not apply.
/// Use ``BusConnection`` for anything that receives or lives long.
///
/// Not `Sendable`: use it from the thread that made it.
public final class OneShotConnection {
  private let raw: OpaquePointer
  /// The address reached.
  public let address: BusAddress

  /// Connects and registers with the bus, resolving `bus` as ``BusConnection`` does
  /// (starting the embedded bus if needed).
  ///
  /// - Throws: ``DBusError`` when no bus can be reached or the address is malformed.
  public init(to bus: Bus = .automatic) throws(DBusError) {
    var lastError = DBusError(.noServer, "no bus to try")
    for candidate in try bus.candidates() {
      do throws(DBusError) {
        let address: BusAddress
        if let candidateAddress = candidate.address {
          address = candidateAddress
        } else {
          address = try EmbeddedBus.start()
        }
        raw = try Self.open(address)
        self.address = address
        return
      } catch {
        lastError = error
        if !candidate.fallsThrough { throw error }
      }
    }
    throw lastError
  }

  private static func open(_ address: BusAddress) throws(DBusError) -> OpaquePointer {
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    guard let connection = dbus_connection_open_private(address.rawValue, &error) else {
      throw DBusError(error, "cannot connect to \(address)")
    }
    dbus_connection_set_exit_on_disconnect(connection, 0)
    guard dbus_bus_register(connection, &error) != 0 else {
      dbus_connection_close(connection)
      dbus_connection_unref(connection)
      throw DBusError(error, "cannot register with the bus at \(address)")
    }
    return connection
  }

  deinit {
    dbus_connection_close(raw)
    dbus_connection_unref(raw)
  }

  /// Queues a message; ``flush()`` writes it.
  ///
  /// - Throws: ``DBusError`` when the message is malformed.
  public func send(_ message: Message) throws(DBusError) {
    let built = try MessageCoding.makeRaw(message)
    defer { dbus_message_unref(built) }
    guard dbus_connection_send(raw, built, nil) != 0 else {
      throw DBusError(.noMemory, "out of memory while queueing a message")
    }
  }

  /// Writes every queued message to the bus.
  public func flush() {
    dbus_connection_flush(raw)
  }

  /// Calls a method and blocks until its reply.
  ///
  /// - Throws: ``DBusError``: the peer's error reply, or ``DBusError/Name/noReply`` after
  ///   `timeoutMilliseconds`.
  public func call(_ message: Message, timeoutMilliseconds: Int32 = 25_000) throws(DBusError)
    -> Message
  {
    let built = try MessageCoding.makeRaw(message)
    defer { dbus_message_unref(built) }
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    guard
      let reply = dbus_connection_send_with_reply_and_block(raw, built, timeoutMilliseconds, &error)
    else { throw DBusError(error, "\(message.member?.rawValue ?? "call") failed") }
    defer { dbus_message_unref(reply) }
    return MessageCoding.decode(reply)
  }
}

extension DBusError {
  /// Converts a libdbus error, keeping its name and prefixing its message with `context`.
  init(_ error: CDBus.DBusError, _ context: String) {
    let name = error.name.map { String(cString: $0) } ?? Name.failed.rawValue
    let message = error.message.map { String(cString: $0) } ?? "unknown error"
    self.init(Name(rawValue: name), "\(context): \(message)")
  }
}
