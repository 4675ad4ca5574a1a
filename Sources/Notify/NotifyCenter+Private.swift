import DBus
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

// The counterparts of Darwin's notify SPI (`notify_private.h`) that mean something on
// Linux. The C library (`notify_private(3)`) calls these.

extension NotifyCenter {
  /// Registers for polling with ``check(_:)``: Darwin's `notify_register_plain`.
  ///
  /// On Darwin it is a check registration that never uses a shared-memory slot. NotifyBus
  /// has no shared memory, so it is the same as ``registerCheck(_:)``.
  public func registerPlain(_ name: NotifyName) async throws(NotifyError) -> NotifyToken {
    try await registerCheck(name)
  }

  /// The raw post counter of a registration, Darwin's `notify_peek`.
  ///
  /// It is 1 when the registration is made, plus one for each post that reached it, modulo
  /// 2³²; ``check(_:)`` is true when it changed.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/invalidToken`` for a token
  ///   that is not live.
  public func peek(_ token: NotifyToken) throws(NotifyError) -> UInt32 {
    try checkUsable()
    return try registry.withLock { registry throws(NotifyError) in
      guard let registration = registry.registrations[token] else { throw Self.invalid(token) }
      return UInt32(truncatingIfNeeded: registration.postCount)
    }
  }

  /// Delivers the token's name to the token each time the file at `path` is created,
  /// written, renamed, deleted or has its attributes changed: Darwin's
  /// `notify_monitor_file`, on inotify.
  ///
  /// Events of the file within 100 ms become one delivery, as on Darwin. The file need not
  /// exist; its directory must. One path per token; cancelling the token stops watching.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/invalidToken`` for a token that
  ///   is not live, ``NotifyStatus/invalidRequest`` for a `self.` or namespace token, a
  ///   token that already monitors a file, or a directory that cannot be watched.
  public func monitorFile(_ path: String, for token: NotifyToken) throws(NotifyError) {
    guard let name = try name(of: token) else {
      throw NotifyError(.invalidRequest, "token \(token) watches a namespace, not a name")
    }
    guard !name.isProcessLocal else {
      throw NotifyError(.invalidRequest, "token \(token) watches a self. name, as on Darwin")
    }
    try FileMonitor.shared.watch(path, token: token, name: name, center: self)
  }

  /// Stops the file monitor of a token, if any; ``cancel(_:)`` does not need it, the monitor
  /// notices the cancelled token by itself.
  public func stopMonitoringFile(for token: NotifyToken) {
    FileMonitor.shared.stop(token)
  }

  /// The version of `notifyd`'s interface and its process id, from the state of
  /// ``NotifyWire/serverVersionName`` (Darwin's `com.apple.system.notify.ipc_version`).
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/serverNotFound`` when no `notifyd`
  ///   answers.
  public func serverVersion() async throws(NotifyError) -> (version: UInt32, processID: Int32) {
    let state = try await state(of: NotifyWire.serverVersionName)
    return (UInt32(truncatingIfNeeded: state), Int32(truncatingIfNeeded: state >> 32))
  }

  /// A report of this process's registrations and, when it answers, of `notifyd`'s names:
  /// what Darwin's `notify_dump_status` asks notifyd to write.
  public func statusReport() async -> String {
    var lines = ["NotifyBus notify status of process \(getpid())"]
    let address = await connection.address?.rawValue ?? "none"
    let unique = await connection.uniqueName?.rawValue ?? "not connected"
    lines.append("bus: \(address), connection \(unique)")
    let counters = statistics
    lines.append(
      "registrations: \(counters.registrations), subscriptions: \(counters.subscriptions), "
        + "deliveries: \(counters.deliveries), malformed signals: \(counters.malformedSignals)")
    let rows = registry.withLock { registry in
      registry.registrations.values.sorted { $0.token < $1.token }.map { registration in
        let subject: String
        switch registration.subject {
        case .name(let name): subject = name.rawValue
        case .namespace(let prefix): subject = prefix + ".*"
        }
        return "token \(registration.token) \(registration.delivery.typeName) \(subject) "
          + "posts \(registration.postCount - 1) suspended \(registration.suspendCount)"
      }
    }
    lines += rows
    do {
      let reply = try await callService(NotifyWire.serviceCall("ListNames", []))
      let (version, pid) = try await serverVersion()
      lines.append("notifyd: pid \(pid), interface version \(version)")
      if case .array(_, let names)? = reply.body.first {
        for case .structure(let fields) in names where fields.count == 3 {
          guard case .string(let name) = fields[0], case .uint64(let value) = fields[1],
            case .uint64(let posts) = fields[2]
          else { continue }
          lines.append("name \(name) state \(value) posts \(posts)")
        }
      }
    } catch {
      lines.append("notifyd: \(error.message)")
    }
    return lines.joined(separator: "\n") + "\n"
  }
}
