import NotifyBridgeCore
import NotifyCore

/// Feeds arbitrary bytes to the MQTT bridge's parsers: received topics, payloads and user
/// properties, broker URLs, namespaces and the `bridge` lines of notifyd's configuration.
///
/// The first byte picks the parser. For messages, the rest is `TOPIC NUL PAYLOAD NUL
/// PROPERTIES`, PROPERTIES lines of `NAME=VALUE`. Parsing must never crash; a message that
/// decodes must encode back to the same topic, payload meaning and properties, and every
/// valid name must map to a topic that parses back to it.
public func fuzz(_ bytes: [UInt8]) {
  guard let selector = bytes.first else { return }
  let input = Array(bytes.dropFirst())
  let text = String(decoding: input, as: UTF8.self)
  switch selector % 4 {
  case 0:
    let map = try! TopicMap()
    let parts = input.split(separator: 0, maxSplits: 2, omittingEmptySubsequences: false)
    let topic = parts[0]
    let payload = parts.count > 1 ? Array(parts[1]) : []
    var properties: [(String, String)] = []
    if parts.count > 2 {
      for line in parts[2].split(separator: UInt8(ascii: "\n")) {
        let pair = line.split(
          separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
        properties.append(
          (
            String(decoding: pair[0], as: UTF8.self),
            pair.count > 1 ? String(decoding: pair[1], as: UTF8.self) : ""
          ))
      }
    }
    if let message = try? BridgeMessage.decode(
      topic: topic, payload: payload, userProperties: properties, map: map)
    {
      let written = map.topic(of: message.name, kind: message.kind)
      precondition(Array(written.utf8).elementsEqual(topic), "topic \(written) is not canonical")
      let again = try? BridgeMessage.decode(
        topic: Array(written.utf8), payload: message.payload,
        userProperties: message.userProperties, map: map)
      precondition(again == message, "\(message) does not encode back to itself")
    }
  case 1:
    if let name = try? NotifyName(text) {
      let map = try! TopicMap()
      for kind in TopicMap.Kind.allCases {
        let topic = map.topic(of: name, kind: kind)
        precondition(
          !topic.utf8.contains { $0 == 0 || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") })
        let parsed = try? map.parse(Array(topic.utf8))
        precondition(parsed?.0 == kind && parsed?.1 == name, "\(name) → \(topic)")
      }
      _ = BridgeScope([name]).contains(name)
      _ = BridgeScope.problem(withNamespace: text)
    }
  case 2:
    if let address = try? BrokerAddress(parsing: text) {
      precondition(
        (try? BrokerAddress(parsing: address.description)) == address,
        "\(address) does not parse back")
    }
    _ = TopicMap.problem(withPrefix: text)
  default:
    if let bridges = try? BridgeConfiguration.parse(input, path: "/fuzz/notify.conf") {
      for bridge in bridges {
        precondition(bridge.problem == nil && !bridge.scope.namespaces.isEmpty)
      }
    }
  }
}
