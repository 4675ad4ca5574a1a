import CMosquitto
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// One MQTT 5 connection through libmosquitto, kept up by a thread of its own.
///
/// The thread connects, runs `mosquitto_loop` until the connection ends, waits (the
/// delay doubling from the configured first to the configured longest) and connects
/// again, until ``stop()``. libmosquitto's callbacks run on that thread and are passed
/// to `events`. ``publish(topic:payload:retain:userProperties:)`` and
/// ``subscribe(_:)`` may be called from any thread (`mosquitto_threaded_set`).
final class MosquittoClient: @unchecked Sendable {
  // Safety of @unchecked Sendable: `handle` is set in init and freed in deinit after the
  // thread ended; libmosquitto locks its own state in threaded mode; `stopping` and
  // `thread` are atomics or written before the thread starts.

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
  private let events: @Sendable (Event) -> Void
  private let stopping = Atomic<Bool>(false)
  private var thread = pthread_t()
  private var started = false

  private static let initialized: Bool = {
    mosquitto_lib_init()
    return true
  }()

  /// Creates the client; nothing connects before ``start()``.
  ///
  /// - Throws: ``BridgeError`` (`client`) when libmosquitto refuses a setting (a TLS
  ///   file it cannot read, say).
  init(_ settings: Settings, events: @escaping @Sendable (Event) -> Void) throws(BridgeError) {
    _ = Self.initialized
    self.settings = settings
    self.events = events
    // clean_session false: MQTT 5 "clean start" off, so the broker keeps the session
    // (subscriptions and the QoS 1 posts for it) across a lost connection.
    guard let made = mosquitto_new(settings.clientID, false, nil) else {
      throw BridgeError(.client, "libmosquitto could not create a client: \(Self.errnoText())")
    }
    handle = made
    mosquitto_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5)
    mosquitto_threaded_set(handle, true)
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
      MosquittoClient.from(object)?.events(.published(id: id, reason: reason))
    }
    mosquitto_subscribe_v5_callback_set(handle) { _, object, id, count, granted, _ in
      let reasons = (0..<Int(count)).map { granted?[$0] ?? 0x80 }
      MosquittoClient.from(object)?.events(.subscribed(id: id, reasons: reasons))
    }
  }

  deinit {
    stop()
    mosquitto_destroy(handle)
  }

  private static func from(_ object: UnsafeMutableRawPointer?) -> MosquittoClient? {
    object.map { Unmanaged<MosquittoClient>.fromOpaque($0).takeUnretainedValue() }
  }

  private func check(_ code: Int32, _ what: String) throws(BridgeError) {
    guard code == MOSQ_ERR_SUCCESS.rawValue else {
      throw BridgeError(.client, "libmosquitto refused \(what): \(Self.describe(code))")
    }
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
    mosquitto_disconnect_v5(handle, 0, nil)
    pthread_join(thread, nil)
  }

  private func run() {
    var delay = settings.reconnectDelay.lowerBound
    var properties: OpaquePointer?
    mosquitto_property_add_int32(
      &properties, Int32(MQTT_PROP_SESSION_EXPIRY_INTERVAL.rawValue), settings.sessionExpiry)
    defer { mosquitto_property_free_all(&properties) }
    while !stopping.load(ordering: .acquiring) {
      let code = mosquitto_connect_bind_v5(
        handle, settings.host, settings.port, settings.keepAlive, nil, properties)
      if code == MOSQ_ERR_SUCCESS.rawValue {
        var loop = MOSQ_ERR_SUCCESS.rawValue
        var heard = false
        while !stopping.load(ordering: .acquiring) && loop == MOSQ_ERR_SUCCESS.rawValue {
          loop = mosquitto_loop(handle, 1000, 1)
          if isConnected.load(ordering: .acquiring) { heard = true }
        }
        if heard { delay = settings.reconnectDelay.lowerBound }
        if stopping.load(ordering: .acquiring) { break }
        if isConnected.exchange(false, ordering: .acquiringAndReleasing) {
          events(.disconnected(text: Self.describe(loop)))
        }
        mosquitto_disconnect_v5(handle, 0, nil)
      } else {
        events(.disconnected(text: Self.describe(code)))
      }
      // Wait `delay` seconds, in short steps so stop() stays prompt.
      var waited: UInt32 = 0
      while waited < delay * 10 && !stopping.load(ordering: .acquiring) {
        usleep(100_000)
        waited += 1
      }
      delay = min(delay * 2, settings.reconnectDelay.upperBound)
    }
    isConnected.store(false, ordering: .releasing)
  }

  /// Whether the broker accepted the current connection.
  let isConnected = Atomic<Bool>(false)

  private func connected(reason: Int32, flags: Int32) {
    if reason == 0 {
      isConnected.store(true, ordering: .releasing)
      events(.connected(sessionPresent: flags & 1 != 0))
    } else {
      events(.refused(reason: reason, text: Self.reasonText(reason)))
    }
  }

  private func disconnected(reason: Int32) {
    guard isConnected.exchange(false, ordering: .acquiringAndReleasing) else { return }
    events(.disconnected(text: reason == 0 ? "the connection ended" : Self.describe(reason)))
  }

  private func received(_ message: mosquitto_message, _ properties: OpaquePointer?) {
    let topic =
      message.topic.map {
        Array(
          UnsafeBufferPointer(
            start: UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self), count: strlen($0)))
      } ?? []
    var payload: [UInt8] = []
    if let bytes = message.payload, message.payloadlen > 0 {
      payload = Array(UnsafeRawBufferPointer(start: bytes, count: Int(message.payloadlen)))
    }
    var pairs: [(String, String)] = []
    var property = properties
    var skipFirst = false
    while true {
      var name: UnsafeMutablePointer<CChar>?
      var value: UnsafeMutablePointer<CChar>?
      guard
        let found = mosquitto_property_read_string_pair(
          property, Int32(MQTT_PROP_USER_PROPERTY.rawValue), &name, &value, skipFirst)
      else { break }
      if let name, let value { pairs.append((String(cString: name), String(cString: value))) }
      free(name)
      free(value)
      property = found
      skipFirst = true
      if pairs.count > 64 { break }
    }
    events(.message(topic: topic, payload: payload, userProperties: pairs))
  }

  // MARK: - Sending

  /// Publishes at QoS 1; returns the message id, or `nil` when not connected (or
  /// libmosquitto refused, `error` then says why).
  func publish(
    topic: String, payload: [UInt8], retain: Bool, userProperties: [(String, String)]
  ) -> Result<Int32, BridgeError> {
    var properties: OpaquePointer?
    defer { mosquitto_property_free_all(&properties) }
    for (name, value) in userProperties {
      mosquitto_property_add_string_pair(
        &properties, Int32(MQTT_PROP_USER_PROPERTY.rawValue), name, value)
    }
    var id: Int32 = 0
    let code = payload.withUnsafeBytes { bytes in
      mosquitto_publish_v5(
        handle, &id, topic, Int32(bytes.count), bytes.baseAddress, 1, retain, properties)
    }
    guard code == MOSQ_ERR_SUCCESS.rawValue else {
      return .failure(BridgeError(.client, Self.describe(code)))
    }
    return .success(id)
  }

  /// Subscribes to each filter at QoS 1 with MQTT 5's no-local option; returns the ids.
  func subscribe(_ filters: [String]) -> [Int32: String] {
    var ids: [Int32: String] = [:]
    for filter in filters {
      var id: Int32 = 0
      let options = Int32(MQTT_SUB_OPT_NO_LOCAL.rawValue)
      if mosquitto_subscribe_v5(handle, &id, filter, 1, options, nil) == MOSQ_ERR_SUCCESS.rawValue {
        ids[id] = filter
      }
    }
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
