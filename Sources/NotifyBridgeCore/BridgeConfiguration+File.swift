import NotifyCore

extension BridgeConfiguration {
  /// The directives of notifyd's configuration file that configure bridges.
  public static let directives = [
    "bridge", "bridge-namespace", "bridge-user", "bridge-password-file", "bridge-ca-file",
    "bridge-cert-file", "bridge-key-file", "bridge-client-id", "bridge-topic-prefix",
    "bridge-session-expiry", "bridge-queue", "bridge-reconnect", "bridge-keepalive",
  ]

  /// Reads the `bridge` blocks of notifyd's configuration file.
  ///
  /// `bridge URL` starts a block; the `bridge-*` lines after it, up to the next `bridge`,
  /// configure it. Other directives (`reserve`) and comments are skipped. Relative paths
  /// are taken from the file's directory. Secrets are not read; see ``loadSecrets()``.
  ///
  /// - Throws: ``BridgeError`` (`configuration`): `PATH:LINE: REASON`.
  public static func parse(_ bytes: [UInt8], path: String) throws(BridgeError)
    -> [BridgeConfiguration]
  {
    var bridges: [BridgeConfiguration] = []
    var namespacesSeen: [Int: Set<NotifyName>] = [:]
    let directory = path.lastIndex(of: "/").map { String(path[...$0]) } ?? ""
    func fail(_ line: Int, _ reason: String) -> BridgeError {
      BridgeError(.configuration, "bad configuration: \(path):\(line): \(reason)")
    }
    func number(_ field: [UInt8], _ line: Int, _ directive: String, _ range: ClosedRange<UInt64>)
      throws(BridgeError) -> UInt64
    {
      guard let value = BridgeMessage.decimal(field), range.contains(value) else {
        throw fail(
          line,
          "\(directive): '\(String(decoding: field, as: UTF8.self))' is not a number from "
            + "\(range.lowerBound) to \(range.upperBound)")
      }
      return value
    }
    var lineNumber = 0
    for rawLine in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
      lineNumber += 1
      var content = Array(rawLine)
      if content.last == UInt8(ascii: "\r") { content.removeLast() }
      let fields = content.split { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }.map(
        Array.init)
      guard let first = fields.first, first.first != UInt8(ascii: "#") else { continue }
      let directive = String(decoding: first, as: UTF8.self)
      guard directive == "bridge" || directive.hasPrefix("bridge-") else { continue }
      guard directives.contains(directive) else {
        throw fail(
          lineNumber,
          "unknown directive '\(directive)'; the bridge directives are "
            + directives.joined(separator: ", "))
      }
      let arguments = fields.dropFirst().map { String(decoding: $0, as: UTF8.self) }
      let expected = directive == "bridge-reconnect" ? 2 : directive == "bridge-namespace" ? -1 : 1
      if expected == -1 ? arguments.isEmpty : arguments.count != expected {
        let spelled =
          expected == -1 ? "at least 1 field" : "\(expected) field\(expected == 1 ? "" : "s")"
        throw fail(lineNumber, "'\(directive)' takes \(spelled), not \(arguments.count)")
      }
      if directive == "bridge" {
        do {
          let broker = try BrokerAddress(parsing: arguments[0])
          bridges.append(
            BridgeConfiguration(broker: broker, namespaces: [], origin: "\(path):\(lineNumber)"))
        } catch {
          throw fail(lineNumber, "bridge: \(error.message)")
        }
        continue
      }
      guard !bridges.isEmpty else {
        throw fail(lineNumber, "'\(directive)' comes before any 'bridge URL' line")
      }
      let index = bridges.count - 1
      let absolute = arguments[0].hasPrefix("/") ? arguments[0] : directory + arguments[0]
      switch directive {
      case "bridge-namespace":
        for text in arguments {
          let name: NotifyName
          do {
            name = try namespace(text, option: "bridge-namespace")
          } catch {
            throw fail(lineNumber, error.message)
          }
          guard namespacesSeen[index, default: []].insert(name).inserted else {
            throw fail(lineNumber, "bridge-namespace '\(text)' is already given for this bridge")
          }
          bridges[index].scope = BridgeScope(bridges[index].scope.namespaces + [name])
        }
      case "bridge-user":
        bridges[index].user = arguments[0]
      case "bridge-password-file":
        bridges[index].passwordFile = absolute
      case "bridge-ca-file":
        bridges[index].caFile = absolute
      case "bridge-cert-file":
        bridges[index].certificateFile = absolute
      case "bridge-key-file":
        bridges[index].keyFile = absolute
      case "bridge-client-id":
        guard arguments[0].utf8.count <= 128 else {
          throw fail(lineNumber, "bridge-client-id is longer than 128 bytes")
        }
        bridges[index].clientID = arguments[0]
      case "bridge-topic-prefix":
        do {
          bridges[index].topics = try TopicMap(prefix: arguments[0])
        } catch {
          throw fail(lineNumber, "bridge-topic-prefix: \(error.message)")
        }
      case "bridge-session-expiry":
        bridges[index].sessionExpirySeconds = UInt32(
          try number(Array(arguments[0].utf8), lineNumber, directive, 0...4_294_967_295))
      case "bridge-queue":
        bridges[index].queueLimit = Int(
          try number(Array(arguments[0].utf8), lineNumber, directive, 0...1_000_000))
      case "bridge-keepalive":
        bridges[index].keepAliveSeconds = UInt32(
          try number(Array(arguments[0].utf8), lineNumber, directive, 5...65535))
      case "bridge-reconnect":
        let low = try number(Array(arguments[0].utf8), lineNumber, directive, 1...3600)
        let high = try number(Array(arguments[1].utf8), lineNumber, directive, 1...3600)
        guard low <= high else {
          throw fail(lineNumber, "bridge-reconnect: the first delay is longer than the last")
        }
        bridges[index].reconnectDelay = UInt32(low)...UInt32(high)
      default:
        break
      }
    }
    for bridge in bridges {
      let line = Int(bridge.origin.split(separator: ":").last ?? "") ?? 0
      if let problem = bridge.problem { throw fail(line, "bridge \(bridge.broker): \(problem)") }
    }
    return bridges
  }

  /// What is missing or inconsistent in a configured bridge, or `nil`.
  package var problem: String? {
    if scope.namespaces.isEmpty { return "no bridge-namespace follows it" }
    if passwordFile != nil && user == nil { return "bridge-password-file needs bridge-user" }
    if (certificateFile == nil) != (keyFile == nil) {
      return "bridge-cert-file and bridge-key-file go together"
    }
    if !broker.usesTLS && (caFile != nil || certificateFile != nil) {
      return "TLS files need an mqtts:// broker"
    }
    // A message not acknowledged (its post failed) is sent again only by a broker that
    // still holds the session when the bridge is back, at most the longest reconnection
    // delay later: the session must outlast that, with a margin for the connection.
    if UInt64(sessionExpirySeconds) < 2 * UInt64(reconnectDelay.upperBound) {
      return "bridge-session-expiry (\(sessionExpirySeconds) s) must be at least twice the "
        + "longest bridge-reconnect delay (\(reconnectDelay.upperBound) s): the broker "
        + "discards the session, and the messages not yet acknowledged, that long after a "
        + "disconnection"
    }
    return nil
  }
}
