public import NotifyCore

/// One bridge to one broker: where, which names, as whom, and how it behaves when the
/// broker goes away (`Protocol/bridge.md`).
///
/// Built from `notifyd`'s `--bridge` options or from `bridge` blocks of its configuration
/// file. Secrets come only from files: the URL may not hold credentials and the password
/// is read from `bridge-password-file`.
public struct BridgeConfiguration: Hashable, Sendable {
  /// The broker.
  public var broker: BrokerAddress
  /// The bridged namespaces.
  public var scope: BridgeScope
  /// The topic layout.
  public var topics: TopicMap
  /// The MQTT user name, if the broker wants one.
  public var user: String?
  /// The file holding the password (its first line).
  public var passwordFile: String?
  /// The password, read from ``passwordFile`` by ``loadSecrets()``.
  public var password: String?
  /// TLS: the certificate authorities' file (`mqtts://` only; default: the system's).
  public var caFile: String?
  /// TLS: the client certificate and its key, for brokers that want one.
  public var certificateFile: String?
  public var keyFile: String?
  /// The MQTT client identifier; by default derived from the host, user and bus.
  public var clientID: String?
  /// How long the broker keeps the session (and queues posts for it) after a loss.
  public var sessionExpirySeconds: UInt32 = 600
  /// The most distinct names held while the broker is away; more are dropped and counted.
  public var queueLimit = 10_000
  /// The first and the longest wait between reconnection attempts, in seconds.
  public var reconnectDelay: ClosedRange<UInt32> = 1...30
  /// The MQTT keep-alive, in seconds.
  public var keepAliveSeconds: UInt32 = 30
  /// Where the bridge was configured, for messages: `--bridge` or `PATH:LINE`.
  public var origin: String

  /// Creates a configuration.
  public init(broker: BrokerAddress, namespaces: [NotifyName], origin: String = "--bridge") {
    self.broker = broker
    scope = BridgeScope(namespaces)
    topics = try! TopicMap()
    self.origin = origin
  }

  /// The configuration of `notifyd --bridge URL --bridge-namespace NS...`.
  ///
  /// - Throws: ``BridgeError`` (`usage`) naming the option.
  public static func commandLine(
    broker: String?, namespaces: [String], user: String? = nil, passwordFile: String? = nil
  ) throws(BridgeError) -> BridgeConfiguration? {
    guard let broker else {
      for (option, given) in [
        ("--bridge-namespace", !namespaces.isEmpty), ("--bridge-user", user != nil),
        ("--bridge-password-file", passwordFile != nil),
      ] where given {
        throw BridgeError(.usage, "\(option) needs --bridge mqtt://HOST[:PORT]")
      }
      return nil
    }
    let address: BrokerAddress
    do {
      address = try BrokerAddress(parsing: broker)
    } catch {
      throw BridgeError(.usage, "--bridge: \(error.message)")
    }
    guard !namespaces.isEmpty else {
      throw BridgeError(
        .usage, "--bridge needs at least one --bridge-namespace NAMESPACE (such as group.example)")
    }
    var configuration = BridgeConfiguration(
      broker: address,
      namespaces: try namespaces.map { text throws(BridgeError) in
        try namespace(text, option: "--bridge-namespace")
      })
    configuration.user = user
    configuration.passwordFile = passwordFile
    if passwordFile != nil && user == nil {
      throw BridgeError(.usage, "--bridge-password-file needs --bridge-user")
    }
    return configuration
  }

  /// Checks a namespace, naming the option or directive.
  static func namespace(_ text: String, option: String) throws(BridgeError) -> NotifyName {
    if let problem = BridgeScope.problem(withNamespace: text) {
      throw BridgeError(.usage, "\(option): '\(text)' is not a namespace to bridge: \(problem)")
    }
    return try! NotifyName(text)
  }

  /// Reads ``passwordFile`` into ``password``.
  ///
  /// - Throws: ``BridgeError`` (`configuration`) naming the file and the setting.
  public mutating func loadSecrets(
    reading read: (String) -> Result<[UInt8], BridgeError> = BridgeFiles.read
  ) throws(BridgeError) {
    guard let passwordFile else { return }
    let bytes: [UInt8]
    switch read(passwordFile) {
    case .success(let contents): bytes = contents
    case .failure(let error):
      throw BridgeError(
        .configuration, "bridge-password-file of \(origin): \(error)")
    }
    let line = bytes.prefix { $0 != UInt8(ascii: "\n") && $0 != UInt8(ascii: "\r") }
    guard !line.isEmpty, let text = String(validating: line, as: UTF8.self),
      !text.utf8.contains(0)
    else {
      throw BridgeError(
        .configuration,
        "bridge-password-file of \(origin): \(passwordFile) does not start with a password line")
    }
    password = text
  }

  /// The client identifier sent to the broker.
  public func effectiveClientID(host: String, user: UInt32, bus: String) -> String {
    if let clientID { return clientID }
    // FNV-1a of the bus address: one identifier per bus, stable across restarts, so
    // the broker's session (and the posts queued in it) outlives a notifyd restart.
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bus.utf8 {
      hash ^= UInt64(byte)
      hash &*= 0x100_0000_01b3
    }
    let safe = String(host.unicodeScalars.filter { $0.isASCII && $0.value > 0x20 }.prefix(40))
    return "notifyd-\(safe)-\(user)-\(String(hash, radix: 16))"
  }
}
