/// Where a bridge's broker listens: `mqtt://HOST[:PORT]` or `mqtts://HOST[:PORT]` (TLS).
public struct BrokerAddress: Hashable, Sendable, CustomStringConvertible {
  /// The host name or address, without brackets.
  public var host: String
  /// The TCP port: by default 1883, or 8883 with TLS.
  public var port: Int
  /// Whether the connection uses TLS (`mqtts://`).
  public var usesTLS: Bool

  /// Reads a broker URL.
  ///
  /// - Throws: ``BridgeError`` (`usage`) saying what is wrong with it.
  public init(parsing text: String) throws(BridgeError) {
    let rest: Substring
    if text.hasPrefix("mqtt://") {
      usesTLS = false
      rest = text.dropFirst("mqtt://".count)
    } else if text.hasPrefix("mqtts://") {
      usesTLS = true
      rest = text.dropFirst("mqtts://".count)
    } else {
      throw BridgeError(
        .usage, "'\(text)' is not a broker URL: it must start with mqtt:// or mqtts://")
    }
    var authority = rest
    if authority.hasSuffix("/") { authority = authority.dropLast() }
    if authority.contains("@") {
      throw BridgeError(
        .usage,
        "'\(text)': credentials never go in the URL; give bridge-user and "
          + "bridge-password-file in the configuration file")
    }
    if authority.contains("/") || authority.contains("?") || authority.contains("#") {
      throw BridgeError(.usage, "'\(text)': a broker URL has no path, query or fragment")
    }
    var portText: Substring?
    if authority.hasPrefix("[") {
      guard let close = authority.firstIndex(of: "]") else {
        throw BridgeError(.usage, "'\(text)': an IPv6 address needs its closing ']'")
      }
      host = String(authority[authority.index(after: authority.startIndex)..<close])
      let after = authority[authority.index(after: close)...]
      if !after.isEmpty {
        guard after.hasPrefix(":") else {
          throw BridgeError(.usage, "'\(text)': only ':PORT' may follow ']'")
        }
        portText = after.dropFirst()
      }
    } else if let colon = authority.firstIndex(of: ":") {
      host = String(authority[..<colon])
      portText = authority[authority.index(after: colon)...]
    } else {
      host = String(authority)
    }
    guard !host.isEmpty else { throw BridgeError(.usage, "'\(text)' names no host") }
    guard host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
      throw BridgeError(.usage, "'\(text)': the host has a blank, control or non-ASCII character")
    }
    port = usesTLS ? 8883 : 1883
    if let portText {
      guard let number = BridgeMessage.decimal(portText.utf8), (1...65535).contains(number) else {
        throw BridgeError(.usage, "'\(text)': the port must be a number from 1 to 65535")
      }
      port = Int(number)
    }
  }

  public var description: String {
    let shown = host.contains(":") ? "[\(host)]" : host
    return "\(usesTLS ? "mqtts" : "mqtt")://\(shown):\(port)"
  }
}
