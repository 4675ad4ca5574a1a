public import NotifyCore

/// The mapping between notification names and MQTT topics (`Protocol/bridge.md`).
///
/// A name's `.`-separated pieces become topic levels under `PREFIX/post/` (posts) or
/// `PREFIX/state/` (retained state), so an MQTT `#` filter watches a namespace. Inside a
/// level, `%`, `/`, `+`, `#`, the C0 and C1 control characters and DEL, and a `$` that
/// starts the name are written as `%` and two upper-case hex digits, byte by byte.
///
/// Decoding accepts only what encoding produces, so every name has exactly one topic.
public struct TopicMap: Hashable, Sendable {
  /// What a topic carries.
  public enum Kind: String, Hashable, Sendable, CaseIterable {
    /// A post of the name; never retained.
    case post
    /// The name's state, retained by the broker.
    case state
  }

  /// The topic levels before `post` or `state`, such as `notifybus`.
  public let prefix: String

  /// The prefix used when the configuration names none.
  public static let defaultPrefix = "notifybus"

  /// Creates a map under `prefix`.
  ///
  /// - Throws: ``BridgeError`` when the prefix is empty, starts with `$`, holds a
  ///   wildcard, NUL or an empty level, or ends with `/`.
  public init(prefix: String = TopicMap.defaultPrefix) throws(BridgeError) {
    if let problem = Self.problem(withPrefix: prefix) {
      throw BridgeError(.usage, "topic prefix '\(prefix)': \(problem)")
    }
    self.prefix = prefix
  }

  /// Why `prefix` cannot be a topic prefix, or `nil`.
  public static func problem(withPrefix prefix: String) -> String? {
    let bytes = Array(prefix.utf8)
    if bytes.isEmpty { return "it is empty" }
    if bytes.count > 200 { return "it is longer than 200 bytes" }
    if bytes.first == UInt8(ascii: "$") { return "it starts with '$', which MQTT reserves" }
    if bytes.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "#") }) {
      return "it contains an MQTT wildcard ('+' or '#')"
    }
    if bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) {
      return "it contains a control character"
    }
    if prefix.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
      return "it has an empty level"
    }
    return nil
  }

  /// The topic of `name`.
  public func topic(of name: NotifyName, kind: Kind) -> String {
    var bytes = Array(prefix.utf8)
    bytes.append(UInt8(ascii: "/"))
    bytes += kind.rawValue.utf8
    bytes.append(UInt8(ascii: "/"))
    Self.appendLevels(of: Array(name.rawValue.utf8), to: &bytes)
    return String(decoding: bytes, as: UTF8.self)
  }

  /// The subscription filter for a namespace: the name itself and every name below it.
  public func filter(namespace: NotifyName, kind: Kind) -> String {
    topic(of: namespace, kind: kind) + "/#"
  }

  /// The name and kind a topic carries.
  ///
  /// - Throws: ``BridgeError`` with code ``BridgeError/Code/badTopic`` when the topic is
  ///   not under the prefix, has an unknown kind, a bad escape, or is not exactly the
  ///   topic ``topic(of:kind:)`` gives for the decoded name.
  public func parse(_ topic: some Collection<UInt8>) throws(BridgeError) -> (Kind, NotifyName) {
    let bytes = Array(topic)
    let length = prefix.utf8.count
    guard bytes.starts(with: prefix.utf8), bytes.count > length,
      bytes[length] == UInt8(ascii: "/")
    else {
      throw BridgeError(.badTopic, "the topic is not under '\(prefix)/'")
    }
    let rest = bytes.dropFirst(length + 1)
    guard let slash = rest.firstIndex(of: UInt8(ascii: "/")),
      let kind = Kind(rawValue: String(decoding: rest[..<slash], as: UTF8.self))
    else {
      throw BridgeError(.badTopic, "the topic's level after '\(prefix)/' is not 'post' or 'state'")
    }
    let levels = rest[(slash + 1)...]
    var name: [UInt8] = []
    name.reserveCapacity(levels.count)
    var index = levels.startIndex
    while index < levels.endIndex {
      let byte = levels[index]
      if byte == UInt8(ascii: "/") {
        name.append(UInt8(ascii: "."))
      } else if byte == UInt8(ascii: "%") {
        guard levels.distance(from: index, to: levels.endIndex) >= 3,
          let high = Self.hexValue(levels[index + 1]), let low = Self.hexValue(levels[index + 2])
        else { throw BridgeError(.badTopic, "the topic has a '%' not followed by two hex digits") }
        name.append(high << 4 | low)
        index += 2
      } else {
        name.append(byte)
      }
      index += 1
    }
    guard let text = String(validating: name, as: UTF8.self) else {
      throw BridgeError(.badTopic, "the topic's name is not valid UTF-8 once unescaped")
    }
    let decoded: NotifyName
    do {
      decoded = try NotifyName(text)
    } catch {
      throw BridgeError(.badTopic, "the topic's name is invalid: \(error.message)")
    }
    var canonical: [UInt8] = []
    Self.appendLevels(of: name, to: &canonical)
    guard canonical.elementsEqual(levels) else {
      throw BridgeError(
        .badTopic,
        "the topic is not written as Protocol/bridge.md says (an escape too many or "
          + "too few, or lower-case hex)")
    }
    return (kind, decoded)
  }

  // MARK: - Escaping

  private static let hexDigits = Array("0123456789ABCDEF".utf8)

  private static func appendLevels(of name: [UInt8], to bytes: inout [UInt8]) {
    var index = 0
    while index < name.count {
      let byte = name[index]
      let isC1 =
        byte == 0xC2 && index + 1 < name.count && (0x80...0x9F).contains(name[index + 1])
      if byte == UInt8(ascii: ".") {
        bytes.append(UInt8(ascii: "/"))
      } else if needsEscape(byte, first: index == 0) || isC1 {
        escape(byte, into: &bytes)
        if isC1 {
          index += 1
          escape(name[index], into: &bytes)
        }
      } else {
        bytes.append(byte)
      }
      index += 1
    }
  }

  private static func needsEscape(_ byte: UInt8, first: Bool) -> Bool {
    switch byte {
    case 0x00...0x1F, 0x7F, UInt8(ascii: "%"), UInt8(ascii: "/"), UInt8(ascii: "+"),
      UInt8(ascii: "#"):
      true
    case UInt8(ascii: "$"): first
    default: false
    }
  }

  private static func escape(_ byte: UInt8, into bytes: inout [UInt8]) {
    bytes.append(UInt8(ascii: "%"))
    bytes.append(hexDigits[Int(byte >> 4)])
    bytes.append(hexDigits[Int(byte & 0x0F)])
  }

  private static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    default: nil
    }
  }
}
