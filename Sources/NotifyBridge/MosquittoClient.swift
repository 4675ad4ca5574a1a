import CMosquitto
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// One MQTT 5 connection through libmosquitto, driven by a loop of its own.
///
/// A thread connects, then polls the client's socket (and a pipe that ``stop()`` and
/// publishers write to) and calls `mosquitto_loop_read`, `mosquitto_loop_write` and
/// `mosquitto_loop_misc` itself, until the connection ends; it waits (the delay doubling
/// from the configured first to the configured longest) and connects again, until
/// ``stop()``.
///
/// Every libmosquitto call on the connected client is made with `io` held, whatever the
/// thread, and libmosquitto runs unthreaded (`mosquitto_threaded_set` off): so
/// ``publish(topic:payload:retain:userProperties:)``, called on notifyd's D-Bus thread,
/// writes the PUBLISH to the socket itself, with no wake of another thread (libmosquitto's
/// threaded mode queues it and wakes its loop through a socket pair, a thread hop per
/// post); and TLS is still used by one thread at a time. The callbacks, which run inside
/// those calls, only record what happened; the connection thread hands it to `events`
/// once `io` is released, so `events` may publish and subscribe.
///
/// A received QoS 1 message is acknowledged only after `events` has taken it (posted it
/// on the local bus) and `acknowledgements` says the bus has every post made so far:
/// libmosquitto queues the PUBACK as it reads the PUBLISH, and until the connection
/// thread has handed the messages read to `events` and the bus has confirmed their posts,
/// publishers only queue their packets (`holding`) and nothing is written, so no PUBACK
/// goes first. The thread reads on meanwhile (the broker sends at most its in-flight
/// limit before it waits for PUBACKs). The confirmation comes on another thread, which
/// calls ``acknowledge()``: that thread then writes what waits itself, with no wake of
/// the connection thread. When `events` does not take a message or the bus cannot
/// confirm, the connection ends before anything queued is written: the broker, which
/// keeps the session, sends every unacknowledged message again after the reconnection.
final class MosquittoClient: @unchecked Sendable {
  // Safety of @unchecked Sendable: `handle` is used only with `io` held, except by the
  // connection thread while `up` is false (connecting, disconnecting), when no other
  // thread uses it; `up`, `pending`, `holding`, `handingOver` and `lastReceived` are read
  // and written only with `io` held; `delivering` and `thread` only by the connection
  // thread (`thread` is written before it starts); `stopping` and `isConnected` are
  // atomics; the rest is set in init.

  /// What libmosquitto reported.
  enum Event {
    /// The broker accepted the connection; whether it kept the session.
    case connected(sessionPresent: Bool)
    /// The broker refused the connection (CONNACK reason code).
    case refused(reason: Int32, text: String)
    /// The connection could not be made or ended (`text` says why).
    case disconnected(text: String)
    /// A publish arrived.
    case message(topic: [UInt8], payload: [UInt8], userProperties: [(String, String)])
    /// The broker acknowledged (or refused, reason ≥ 0x80) a QoS 1 publish.
    case published(id: Int32, reason: Int32)
    /// The broker answered a subscription, one reason (granted QoS, or ≥ 0x80) per filter.
    case subscribed(id: Int32, reasons: [Int32])
    /// The bus will not confirm the posts of messages taken (``Acknowledgements/failed``):
    /// the connection ends, so none of what was read since the last PUBACKs is
    /// acknowledged.
    case unconfirmed
  }

  /// Whether the messages `events` took may be acknowledged.
  enum Acknowledgements {
    /// The bus has every post made for them: their PUBACKs may go.
    case due
    /// Some posts wait for the bus's confirmation.
    case held
    /// Some posts will not be confirmed (the bus connection was lost, or it did not
    /// answer in time).
    case failed
  }

  struct Settings {
    var host: String
    var port: Int32
    var clientID: String
    var user: String?
    var password: String?
    var caFile: String?
    var certificateFile: String?
    var keyFile: String?
    var usesTLS: Bool
    var keepAlive: Int32
    var sessionExpiry: UInt32
    var reconnectDelay: ClosedRange<UInt32>
  }

  private let handle: OpaquePointer
  private let settings: Settings
  /// Returns whether it took the event: `false` for a message that could not be posted,
  /// which then is not acknowledged.
  private let events: @Sendable (Event) -> Bool
  /// Whether the posts `events` made for the messages it took are all confirmed; asked
  /// with `io` held (it must not call back into the client).
  private let acknowledgements: @Sendable () -> Acknowledgements
  private let stopping = Atomic<Bool>(false)
  private var thread = pthread_t()
  private var started = false
  /// Held for every libmosquitto call on the connected client.
  ///
  /// A plain pthread mutex, which puts a waiter to sleep at once. Synchronization's
  /// `Mutex` spins first (1000 `pause`s, tens of µs): on the posting host the broker's
  /// PUBACK wakes the connection thread while notifyd's D-Bus thread still holds `io`
  /// writing the PUBLISH, and the spinning thread took a core from mosquitto and the
  /// receiving host, on the hop's critical path.
  private let io: UnsafeMutablePointer<pthread_mutex_t> = {
    let made = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    pthread_mutex_init(made, nil)
    return made
  }()
  /// Whether the socket is connected (the CONNACK may still be on its way).
  ///
  /// Other threads use the handle only while it is. With `io` held only.
  private var up = false
  /// Whether the broker answered the current connection's CONNECT (accepting or not).
  ///
  /// With `io` held only.
  private var answered = false
  /// What the callbacks reported, not yet handed to `events`.
  ///
  /// With `io` held only.
  private var pending: [Event] = []
  /// Whether PUBACKs queued by libmosquitto must wait: the connection thread is handing
  /// the messages it read to `events`, or the bus has not confirmed their posts yet.
  ///
  /// Publishers then only queue their packets (the thread that ends the wait writes them
  /// after). With `io` held only.
  private var holding = false
  /// Whether the connection thread is handing messages it read to `events`.
  ///
  /// Until it is done, ``acknowledge()`` writes nothing. With `io` held only.
  private var handingOver = false
  /// The batch being handed to `events`, swapped with `pending`.
  ///
  /// Connection thread only.
  private var delivering: [Event] = []
  /// The topic, origin and payload of the message received last, handed on again for a
  /// message that repeats them (the usual case: one name posted again and again by one
  /// bridge) instead of copied anew.
  ///
  /// With `io` held only.
  private var lastReceived = (topic: [UInt8](), origin: "", payload: [UInt8]())
  /// A non-blocking pipe: a byte written to `wakeWriteDescriptor` wakes the connection
  /// thread out of `poll`.
  private let wakeDescriptor: CInt
  private let wakeWriteDescriptor: CInt

  private static let initialized: Bool = {
    mosquitto_lib_init()
    return true
  }()

  /// Creates the client; nothing connects before ``start()``.
  ///
  /// - Throws: ``BridgeError`` (`client`) when libmosquitto refuses a setting (a TLS
  ///   file it cannot read, say).
  init(
    _ settings: Settings, events: @escaping @Sendable (Event) -> Bool,
    acknowledgements: @escaping @Sendable () -> Acknowledgements
  ) throws(BridgeError) {
    _ = Self.initialized
    self.settings = settings
    self.events = events
    self.acknowledgements = acknowledgements
    var ends: [CInt] = [-1, -1]
    guard pipe(&ends) == 0 else {
      throw BridgeError(.client, "cannot make the bridge's wake pipe: \(Self.errnoText())")
    }
    for end in ends {
      _ = fcntl(end, F_SETFD, FD_CLOEXEC)
      _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
    }
    // clean_session false: MQTT 5 "clean start" off, so the broker keeps the session
    // (subscriptions and the QoS 1 posts for it) across a lost connection.
    guard let made = mosquitto_new(settings.clientID, false, nil) else {
      close(ends[0])
      close(ends[1])
      throw BridgeError(.client, "libmosquitto could not create a client: \(Self.errnoText())")
    }
    handle = made
    wakeDescriptor = ends[0]
    wakeWriteDescriptor = ends[1]
    mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5)
    // One small packet per post: Nagle's algorithm would hold each behind the last ACK.
    mosquitto_int_option(handle, MOSQ_OPT_TCP_NODELAY, 1)
    if let user = settings.user {
      try check(mosquitto_username_pw_set(handle, user, settings.password), "the user name")
    }
    if settings.usesTLS {
      let capath = settings.caFile == nil ? "/etc/ssl/certs" : nil
      try check(
        mosquitto_tls_set(
          handle, settings.caFile, capath, settings.certificateFile, settings.keyFile, nil),
        "the TLS files")
    }
    mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
    // The callbacks run inside a libmosquitto call, with `io` held.
    mosquitto_connect_v5_callback_set(handle) { _, object, reason, flags, _ in
      MosquittoClient.from(object)?.connected(reason: reason, flags: flags)
    }
    mosquitto_disconnect_v5_callback_set(handle) { _, object, reason, _ in
      MosquittoClient.from(object)?.disconnected(reason: reason)
    }
    mosquitto_message_v5_callback_set(handle) { _, object, message, properties in
      guard let message else { return }
      MosquittoClient.from(object)?.received(message.pointee, properties)
    }
    mosquitto_publish_v5_callback_set(handle) { _, object, id, reason, _ in
      MosquittoClient.from(object)?.pending.append(.published(id: id, reason: reason))
    }
    mosquitto_subscribe_v5_callback_set(handle) { _, object, id, count, granted, _ in
      let reasons = (0..<Int(count)).map { granted?[$0] ?? 0x80 }
      MosquittoClient.from(object)?.pending.append(.subscribed(id: id, reasons: reasons))
    }
  }

  deinit {
    stop()
    mosquitto_destroy(handle)
    close(wakeDescriptor)
    close(wakeWriteDescriptor)
    pthread_mutex_destroy(io)
    io.deallocate()
  }

  private static func from(_ object: UnsafeMutableRawPointer?) -> MosquittoClient? {
    object.map { Unmanaged<MosquittoClient>.fromOpaque($0).takeUnretainedValue() }
  }

  private func check(_ code: Int32, _ what: String) throws(BridgeError) {
    guard code == MOSQ_ERR_SUCCESS.rawValue else {
      throw BridgeError(.client, "libmosquitto refused \(what): \(Self.describe(code))")
    }
  }

  /// Runs `body` with `io` held.
  private func locked<Result: Sendable>(_ body: () -> Result) -> Result {
    pthread_mutex_lock(io)
    defer { pthread_mutex_unlock(io) }
    return body()
  }

  /// Wakes the connection thread out of `poll`.
  private func wake() {
    var byte: UInt8 = 0
    _ = write(wakeWriteDescriptor, &byte, 1)
  }

  // MARK: - The connection thread

  /// Starts the thread that connects and reconnects.
  func start() {
    guard !started else { return }
    started = true
    let context = Unmanaged.passRetained(self).toOpaque()
    pthread_create(
      &thread, nil,
      { context in
        let client = Unmanaged<MosquittoClient>.fromOpaque(context!).takeRetainedValue()
        client.run()
        return nil
      }, context)
  }

  /// Ends the connection and the thread; returns once the thread has ended.
  func stop() {
    guard started, !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
    wake()
    pthread_join(thread, nil)
  }

  private static let success = MOSQ_ERR_SUCCESS.rawValue

  private func run() {
    var delay = settings.reconnectDelay.lowerBound
    var properties: OpaquePointer?
    mosquitto_property_add_int32(
      &properties, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), settings.sessionExpiry)
    defer { mosquitto_property_free_all(&properties) }
    while !stopping.load(ordering: .acquiring) {
      locked { answered = false }
      // `up` is false: no other thread uses the handle while it connects.
      let code = mosquitto_connect_bind_v5(
        handle, settings.host, settings.port, settings.keepAlive, nil, properties)
      if code == Self.success {
        // Each connection makes libmosquitto's socket pair anew.
        locked {
          up = true
          Self.closeSocketPair(of: handle)
        }
        let (ended, heard) = serve()
        if heard { delay = settings.reconnectDelay.lowerBound }
        let answered = locked { () -> Bool in
          up = false
          holding = false
          handingOver = false
          return self.answered
        }
        let stopped = stopping.load(ordering: .acquiring)
        // Reported when the connection was accepted and is lost, or when it ended before
        // any CONNACK (a failed TLS handshake, say); a refusal reported itself.
        if !stopped
          && (isConnected.exchange(false, ordering: .acquiringAndReleasing) || !answered)
        {
          _ = events(.disconnected(text: ended.text ?? Self.describe(ended.code)))
        }
        // A DISCONNECT if the socket still works (not after an unpostable message, which
        // shut it); its callback reports nothing new.
        locked {
          if !ended.shut { mosquitto_disconnect_v5(handle, 0, nil) }
          pending.removeAll()
        }
        if stopped { break }
      } else {
        _ = events(.disconnected(text: Self.describe(code)))
      }
      waitOrStop(seconds: delay)
      // The configuration keeps the longest delay at most half the session expiry, so a
      // message left unacknowledged is still in the broker's session when this is back.
      delay = min(delay * 2, settings.reconnectDelay.upperBound)
    }
    isConnected.store(false, ordering: .releasing)
  }

  /// Waits `seconds`, or until stop(); a wake left in the pipe by a publisher of the
  /// connection that ended does not cut the wait short.
  private func waitOrStop(seconds: UInt32) {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let deadline = Int(now.tv_sec) * 1000 + Int(now.tv_nsec) / 1_000_000 + Int(seconds) * 1000
    var descriptor = pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)
    while !stopping.load(ordering: .acquiring) {
      clock_gettime(CLOCK_MONOTONIC, &now)
      let left = deadline - (Int(now.tv_sec) * 1000 + Int(now.tv_nsec) / 1_000_000)
      guard left > 0 else { return }
      descriptor.revents = 0
      if poll(&descriptor, 1, CInt(left)) > 0 {
        var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        _ = read(wakeDescriptor, &bytes, MemoryLayout.size(ofValue: bytes))
      }
    }
  }

  /// Drives the connection until it ends or stop(): returns libmosquitto's last code,
  /// why, whether the socket was shut for an unpostable message, and whether the broker
  /// accepted the connection.
  private func serve() -> (ended: (code: Int32, text: String?, shut: Bool), heard: Bool) {
    var heard = false
    var descriptors = [
      pollfd(fd: -1, events: 0, revents: 0),
      pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0),
    ]
    // `io` is taken twice a turn (reading, then writing and keeping alive), each time also
    // taking what the callbacks reported and what to poll for next: a publisher on
    // another thread waits for it at most that long.
    var (socket, wantsWrite) = locked { nextPoll() }
    while !stopping.load(ordering: .acquiring) {
      guard socket >= 0 else { return ((MOSQ_ERR_CONN_LOST.rawValue, nil, false), heard) }
      descriptors[0] = pollfd(
        fd: socket, events: Int16(POLLIN) | (wantsWrite ? Int16(POLLOUT) : 0), revents: 0)
      descriptors[1].revents = 0
      // At most a second, so that `mosquitto_loop_misc` keeps the connection alive.
      if poll(&descriptors, 2, 1000) < 0 && errno != EINTR {
        return ((MOSQ_ERR_ERRNO.rawValue, nil, false), heard)
      }
      if descriptors[1].revents != 0 {
        var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        _ = read(wakeDescriptor, &bytes, MemoryLayout.size(ofValue: bytes))
      }
      var code = Self.success
      if descriptors[0].revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 {
        code = locked { () -> Int32 in
          // What libmosquitto answers while reading (a PUBACK) waits for the write below:
          // the messages read reach the bus first.
          mosquitto_threaded_set(handle, true)
          let reported = pending.count
          let read = readAll()
          mosquitto_threaded_set(handle, false)
          if read != Self.success { up = false }
          if pending[reported...].contains(where: { if case .message = $0 { true } else { false } })
          {
            holding = true
            handingOver = true
          }
          swap(&pending, &delivering)
          return read
        }
        if !deliver() { return teardown("a received message could not be posted on the bus") }
      }
      if code == Self.success {
        var failed = false
        (code, socket, wantsWrite) = locked { () -> (Int32, CInt, Bool) in
          handingOver = false
          if holding {
            switch acknowledgements() {
            case .due: holding = false
            case .held: break
            case .failed: failed = true
            }
          }
          var result = Self.success
          // While holding, nothing is written (the PUBACKs wait), and libmosquitto's
          // keep-alive, which would write them too, waits (at most the time the bus has to
          // confirm, shorter than any keep-alive).
          if !holding {
            if mosquitto_want_write(handle) { result = mosquitto_loop_write(handle, 1) }
            if result == Self.success { result = mosquitto_loop_misc(handle) }
            if result != Self.success { up = false }
          }
          swap(&pending, &delivering)
          let (socket, wantsWrite) = nextPoll()
          return (result, socket, wantsWrite && !holding)
        }
        if failed {
          delivering.removeAll(keepingCapacity: true)
          _ = events(.unconfirmed)
          return teardown("the bus did not confirm the posts of what was received")
        }
        // What `events` publishes now and cannot finish wakes the poll.
        _ = deliver()
      }
      if isConnected.load(ordering: .acquiring) { heard = true }
      if code != Self.success { return ((code, nil, false), heard) }
    }
    return ((Self.success, nil, false), heard)
  }

  /// The bus confirmed posts (on the calling thread, notifyd's D-Bus thread): writes
  /// the PUBACKs and packets that waited, if `acknowledgements` now says they are due and
  /// the connection thread is not handing messages over (it decides once it is done).
  ///
  /// What the socket does not take, or a failure, wakes the connection thread, which
  /// finishes it.
  func acknowledge() {
    let unfinished = locked { () -> Bool in
      guard up, holding, !handingOver else { return false }
      switch acknowledgements() {
      case .due:
        holding = false
        let reported = pending.count
        var code = Self.success
        if mosquitto_want_write(handle) { code = mosquitto_loop_write(handle, 1) }
        return code != Self.success || mosquitto_want_write(handle) || pending.count > reported
      case .held:
        return false
      case .failed:
        return true
      }
    }
    if unfinished { wake() }
  }

  /// Wakes the connection thread to see that the posts will not be confirmed
  /// (`acknowledgements` says ``Acknowledgements/failed`` now).
  func confirmationFailed() { wake() }

  /// Ends the connection before anything queued (the batch's PUBACKs) is written.
  private func teardown(_ why: String) -> (
    ended: (code: Int32, text: String?, shut: Bool), heard: Bool
  ) {
    locked {
      holding = false
      handingOver = false
      up = false
      shutdown(mosquitto_socket(handle), Int32(SHUT_RDWR))
    }
    return (
      (
        MOSQ_ERR_CONN_LOST.rawValue,
        why + "; not acknowledged, so the broker sends it again", true
      ), false
    )
  }

  /// Reads what the socket has, and over TLS what OpenSSL holds decrypted too; with `io`
  /// held.
  ///
  /// A TLS record can carry several MQTT packets. The first read takes the whole record
  /// into OpenSSL, where `poll` cannot see the rest: it would wait for the socket's next
  /// bytes (on a quiet link, the next keep-alive). `mosquitto_loop_read` goes on while
  /// `SSL_pending` says so only if `errno` is not EAGAIN, which any earlier call may have
  /// left behind (the write to libmosquitto's own socket pair, say).
  private func readAll() -> Int32 {
    var code = mosquitto_loop_read(handle, 1)
    while code == Self.success, let pending = Self.sslPending, let ssl = mosquitto_ssl_get(handle),
      pending(ssl) > 0
    {
      code = mosquitto_loop_read(handle, 1)
    }
    return code
  }

  /// OpenSSL's `SSL_pending`, looked up once in what the process has loaded, or `nil`.
  ///
  /// NotifyBus links no OpenSSL library of its own: libmosquitto links libssl, so the
  /// function is in the process whenever libmosquitto is. Without it (a libmosquitto
  /// built without TLS, or another TLS library) TLS works as before the pending check:
  /// packets after the first of a TLS record wait for the socket's next bytes
  /// (``missingTLSPendingNotice()`` says so once).
  private static let sslPending: notifybus_ssl_pending_function? = {
    // RTLD_DEFAULT (a null handle): the global scope, libmosquitto's dependencies included.
    guard let symbol = dlsym(nil, "SSL_pending") else { return nil }
    return unsafeBitCast(symbol, to: notifybus_ssl_pending_function.self)
  }()

  private static let toldMissingTLSPending = Atomic<Bool>(false)

  /// The log line for a TLS connection when `SSL_pending` cannot be found, the first time
  /// this process asks; `nil` otherwise.
  static func missingTLSPendingNotice() -> String? {
    guard sslPending == nil, !toldMissingTLSPending.exchange(true, ordering: .relaxed) else {
      return nil
    }
    return "OpenSSL's SSL_pending is not loaded in this process; over TLS, messages that "
      + "arrive in one TLS record after the first wait for the connection's next bytes "
      + "(at the latest its keep-alive)"
  }

  /// Closes libmosquitto's own socket pair and leaves it without one; with `io` held,
  /// once the connection's pair exists.
  ///
  /// libmosquitto writes a byte to the pair for every packet it queues, to wake
  /// `mosquitto_loop`, which the bridge does not use: nothing reads the pair. Left alone
  /// it fills after 278 packets (Linux), and every later packet costs a failed write
  /// that also leaves `errno` at EAGAIN. libmosquitto 2.0 writes to the pair, and closes
  /// it (at the next connection, which makes a new one, and in `mosquitto_destroy`), only
  /// when its descriptors are not `INVALID_SOCKET` (-1), as after a failed
  /// `socketpair(2)`: with both ends closed and set to -1, a packet costs its own write
  /// only. (Pointing the write end at `/dev/null`, as before, still cost a `write(2)` a
  /// packet, made before the PUBLISH itself, on the hop's path.)
  ///
  /// Only with a libmosquitto whose client structure is known (``knowsClientLayout``);
  /// libmosquitto 2.0.11 has no option to go without the pair.
  private static func closeSocketPair(of handle: OpaquePointer) {
    guard knowsClientLayout, let (readEnd, writeEnd) = socketPair(of: handle) else { return }
    let fields = UnsafeMutableRawPointer(handle).assumingMemoryBound(to: CInt.self)
    fields[1] = -1
    fields[2] = -1
    close(readEnd)
    close(writeEnd)
  }

  /// Whether the libmosquitto running is a 2.0 release (tested: 2.0.11, Debian 12), whose
  /// client structure starts as ``socketPair(of:)`` reads it; any other leaves the pair
  /// alone.
  private static let knowsClientLayout: Bool = {
    var (major, minor, revision): (Int32, Int32, Int32) = (0, 0, 0)
    _ = mosquitto_lib_version(&major, &minor, &revision)
    return major == 2 && minor == 0
  }()

  /// The read and write ends of the socket pair libmosquitto keeps for `mosquitto_loop`.
  ///
  /// libmosquitto has no call that returns them. Its client structure starts, in every
  /// release from 1.4 to 2.0 (only 2.0 is used: ``knowsClientLayout``), with the
  /// socket, then the pair's read and write ends (`mosq_sock_t sock, sockpairR,
  /// sockpairW`); the first is checked against `mosquitto_socket`, and both ends must be
  /// stream sockets of the Unix domain made by this process, or the pair is left alone
  /// (`nil`: its writes then fail once it is full, which costs a system call and nothing
  /// else).
  private static func socketPair(of handle: OpaquePointer) -> (CInt, CInt)? {
    let fields = UnsafeRawPointer(handle).assumingMemoryBound(to: CInt.self)
    let (socket, readEnd, writeEnd) = (fields[0], fields[1], fields[2])
    guard socket >= 0, socket == mosquitto_socket(handle), readEnd >= 0, writeEnd >= 0,
      readEnd != writeEnd, readEnd != socket, writeEnd != socket
    else { return nil }
    func isOwnUnixStream(_ fd: CInt) -> Bool {
      var value: CInt = 0
      var length = socklen_t(MemoryLayout<CInt>.size)
      guard getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &value, &length) == 0, value == AF_UNIX,
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &value, &length) == 0,
        value == CInt(SOCK_STREAM.rawValue)
      else { return false }
      // struct ucred (pid, uid, gid), which Glibc shows only with _GNU_SOURCE.
      var peer: (pid: pid_t, uid: uid_t, gid: gid_t) = (0, 0, 0)
      var peerLength = socklen_t(MemoryLayout.size(ofValue: peer))
      return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peerLength) == 0
        && peer.pid == getpid()
    }
    return isOwnUnixStream(readEnd) && isOwnUnixStream(writeEnd) ? (readEnd, writeEnd) : nil
  }

  /// The socket to poll and whether to poll it for writing; with `io` held.
  private func nextPoll() -> (CInt, Bool) {
    let socket = mosquitto_socket(handle)
    if socket < 0 { up = false }
    return (socket, mosquitto_want_write(handle))
  }

  /// Hands what the callbacks reported, taken with `io` held, to `events`, `io` released;
  /// returns whether `events` took every message.
  ///
  /// After a message it did not take, the later messages are not handed on (none of the
  /// batch is acknowledged: the broker sends them all again), but the other events are
  /// (a SUBACK or PUBACK that came in the same read).
  private func deliver() -> Bool {
    defer { delivering.removeAll(keepingCapacity: true) }
    var tookAll = true
    for event in delivering {
      if case .message = event {
        if tookAll && !events(event) { tookAll = false }
      } else {
        _ = events(event)
      }
    }
    return tookAll
  }

  /// Whether the broker accepted the current connection.
  let isConnected = Atomic<Bool>(false)

  private func connected(reason: Int32, flags: Int32) {
    answered = true
    if reason == 0 {
      isConnected.store(true, ordering: .releasing)
      pending.append(.connected(sessionPresent: flags & 1 != 0))
    } else {
      pending.append(.refused(reason: reason, text: Self.reasonText(reason)))
    }
  }

  private func disconnected(reason: Int32) {
    guard isConnected.exchange(false, ordering: .acquiringAndReleasing) else { return }
    pending.append(
      .disconnected(text: reason == 0 ? "the connection ended" : Self.describe(reason)))
  }

  private func received(_ message: mosquitto_message, _ properties: OpaquePointer?) {
    var topic: [UInt8] = []
    if let text = message.topic {
      let bytes = UnsafeRawBufferPointer(start: text, count: strlen(text))
      topic = bytes.elementsEqual(lastReceived.topic) ? lastReceived.topic : Array(bytes)
      lastReceived.topic = topic
    }
    var payload: [UInt8] = []
    if let start = message.payload, message.payloadlen > 0 {
      let bytes = UnsafeRawBufferPointer(start: start, count: Int(message.payloadlen))
      payload = bytes.elementsEqual(lastReceived.payload) ? lastReceived.payload : Array(bytes)
      lastReceived.payload = payload
    }
    // Only the bridge's own properties are kept (``BridgeMessage`` reads no other), their
    // names as the constants: no string made for a name. Every property is read, however
    // many of other names come first (the packet's size bounds them), until a third of the
    // bridge's own makes the stamp malformed whatever follows.
    var pairs: [(String, String)] = []
    var property = properties
    var skipFirst = false
    while pairs.count < 3 {
      var name: UnsafeMutablePointer<CChar>?
      var value: UnsafeMutablePointer<CChar>?
      guard
        let found = mosquitto_property_read_string_pair(
          property, Int32(MQTT_PROP_USER_PROPERTY.rawValue), &name, &value, skipFirst)
      else { break }
      if let name, let value {
        // Room for the stamp, in one allocation.
        if pairs.isEmpty { pairs.reserveCapacity(2) }
        if Self.isNamed(name, BridgeMessage.originProperty) {
          if !Self.isNamed(value, lastReceived.origin) {
            lastReceived.origin = String(cString: value)
          }
          pairs.append((BridgeMessage.originProperty, lastReceived.origin))
        } else if Self.isNamed(name, BridgeMessage.sequenceProperty) {
          pairs.append((BridgeMessage.sequenceProperty, String(cString: value)))
        }
      }
      free(name)
      free(value)
      property = found
      skipFirst = true
    }
    pending.append(.message(topic: topic, payload: payload, userProperties: pairs))
  }

  /// Whether the C string `name` is `expected` (a native string: its C form is its own
  /// storage).
  private static func isNamed(_ name: UnsafePointer<CChar>, _ expected: String) -> Bool {
    expected.withCString { strcmp(name, $0) == 0 }
  }

  // MARK: - Sending

  /// Publishes at QoS 1 with the stamp's user properties (Protocol/bridge.md), writing the
  /// packet to the socket on the calling thread; returns the message id, or a failure when
  /// not connected (or libmosquitto refused, the error says why).
  ///
  /// The strings go to libmosquitto through `withCString`, which lends a native string's
  /// own bytes: passing a `String` where C wants a pointer copies it into a new array
  /// first (five allocations a post).
  func publish(
    topic: String, payload: [UInt8], retain: Bool, stamp: BridgeStamp?
  ) -> Result<Int32, BridgeError> {
    var properties: OpaquePointer?
    defer { mosquitto_property_free_all(&properties) }
    if let stamp {
      let kind = Int32(MQTT_PROP_USER_PROPERTY.rawValue)
      BridgeMessage.originProperty.withCString { name in
        stamp.origin.hex.withCString { value in
          _ = mosquitto_property_add_string_pair(&properties, kind, name, value)
        }
      }
      BridgeMessage.sequenceProperty.withCString { name in
        String(stamp.sequence).withCString { value in
          _ = mosquitto_property_add_string_pair(&properties, kind, name, value)
        }
      }
    }
    let property = properties
    let (code, id, unfinished) = locked { () -> (Int32, Int32, Bool) in
      guard up else { return (MOSQ_ERR_NO_CONN.rawValue, 0, false) }
      var id: Int32 = 0
      let reported = pending.count
      // While holding, libmosquitto only queues the packet (threaded mode).
      if holding { mosquitto_threaded_set(handle, true) }
      let code = topic.withCString { topic in
        payload.withUnsafeBytes { bytes in
          mosquitto_publish_v5(
            handle, &id, topic, Int32(bytes.count), bytes.baseAddress, 1, retain, property)
        }
      }
      if holding { mosquitto_threaded_set(handle, false) }
      // A packet the socket did not take whole, or what the call reported, is the
      // connection thread's to finish (while holding, it writes after delivering anyway).
      return (code, id, !holding && (mosquitto_want_write(handle) || pending.count > reported))
    }
    if unfinished { wake() }
    guard code == Self.success else {
      return .failure(BridgeError(.client, Self.describe(code)))
    }
    return .success(id)
  }

  /// Subscribes to each filter at QoS 1 with MQTT 5's no-local option; returns the ids.
  func subscribe(_ filters: [String]) -> [Int32: String] {
    let (ids, unfinished) = locked { () -> ([Int32: String], Bool) in
      var ids: [Int32: String] = [:]
      guard up else { return (ids, false) }
      let reported = pending.count
      for filter in filters {
        var id: Int32 = 0
        let options = Int32(MQTT_SUB_OPT_NO_LOCAL.rawValue)
        if holding { mosquitto_threaded_set(handle, true) }
        if mosquitto_subscribe_v5(handle, &id, filter, 1, options, nil) == Self.success {
          ids[id] = filter
        }
        if holding { mosquitto_threaded_set(handle, false) }
      }
      return (ids, mosquitto_want_write(handle) || pending.count > reported)
    }
    if unfinished { wake() }
    return ids
  }

  // MARK: - Messages

  static func describe(_ code: Int32) -> String {
    if code == MOSQ_ERR_ERRNO.rawValue { return errnoText() }
    return String(cString: mosquitto_strerror(code))
  }

  /// The MQTT 5 reason code's name, as libmosquitto spells it.
  static func reasonText(_ reason: Int32) -> String {
    mosquitto_reason_string(reason).map { String(cString: $0) } ?? "reason \(reason)"
  }

  private static func errnoText() -> String { String(cString: strerror(errno)) }
}
