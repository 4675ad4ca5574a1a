public import NotifyCore

/// Where a bridged message came from: one notifyd bridge, for its whole life.
///
/// Sent as the MQTT 5 user property `notifybus-origin`: 32 lower-case hex digits.
public struct BridgeOrigin: Hashable, Sendable, CustomStringConvertible {
  /// The 16 bytes, as 32 lower-case hex digits.
  public let hex: String

  /// A new random origin.
  public static func random() -> BridgeOrigin {
    var generator = SystemRandomNumberGenerator()
    let high = generator.next() as UInt64
    let low = generator.next() as UInt64
    return BridgeOrigin(unchecked: hex16(high) + hex16(low))
  }

  /// Reads an origin property's value; `nil` unless it is exactly 32 lower-case hex digits.
  public init?(_ text: String) {
    let bytes = text.utf8
    guard bytes.count == 32,
      bytes.allSatisfy({
        ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
          || ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f"))
      })
    else { return nil }
    hex = text
  }

  private init(unchecked hex: String) { self.hex = hex }

  private static func hex16(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
  }

  public var description: String { hex }
}

/// Who published a message and its place in that bridge's posts.
public struct BridgeStamp: Hashable, Sendable {
  /// The publishing bridge.
  public var origin: BridgeOrigin
  /// Its post counter: 1 for its first message, then one more for each.
  public var sequence: UInt64

  /// Creates a stamp.
  public init(origin: BridgeOrigin, sequence: UInt64) {
    self.origin = origin
    self.sequence = sequence
  }
}

/// One bridged message: a post or a state, as it travels over MQTT (`Protocol/bridge.md`).
public struct BridgeMessage: Hashable, Sendable {
  /// The payload format version this bridge writes and reads.
  public static let formatVersion = 1
  /// The largest payload a version-1 message has; larger ones are refused unread.
  public static let maximumPayload = 64
  /// The user property naming the publishing bridge.
  public static let originProperty = "notifybus-origin"
  /// The user property with the publishing bridge's post counter.
  public static let sequenceProperty = "notifybus-sequence"

  /// What the message says.
  public enum Content: Hashable, Sendable {
    /// The name was posted.
    case post
    /// The name's state, and when it was set (ns since the epoch), when the sender said.
    case state(UInt64, setTime: UInt64?)
    /// An empty retained state message: the broker's way to delete a retained value.
    case cleared
  }

  /// The name.
  public var name: NotifyName
  /// What happened to it.
  public var content: Content
  /// The bridge that published it and its post counter, when it says.
  public var stamp: BridgeStamp?

  /// Creates a message.
  public init(name: NotifyName, content: Content, stamp: BridgeStamp? = nil) {
    self.name = name
    self.content = content
    self.stamp = stamp
  }

  // MARK: - Encoding

  /// The topic kind the message travels on.
  public var kind: TopicMap.Kind {
    switch content {
    case .post: .post
    case .state, .cleared: .state
    }
  }

  /// A post's payload, made once.
  private static let postPayload: [UInt8] = Array("1".utf8)

  /// The payload: `1` for a post, `1 STATE SET_TIME` for a state, empty for `cleared`.
  public var payload: [UInt8] {
    switch content {
    case .post: Self.postPayload
    case .state(let value, let time):
      Array("1 \(value)\(time.map { " \($0)" } ?? "")".utf8)
    case .cleared: []
    }
  }

  /// The MQTT 5 user properties, in order.
  public var userProperties: [(String, String)] {
    guard let stamp else { return [] }
    return [
      (Self.originProperty, stamp.origin.hex), (Self.sequenceProperty, String(stamp.sequence)),
    ]
  }

  // MARK: - Decoding

  /// Reads a publish received from the broker.
  ///
  /// - Parameters:
  ///   - topic: The topic's bytes.
  ///   - payload: The payload's bytes.
  ///   - userProperties: The MQTT 5 user properties, in order; others are ignored.
  ///   - map: The topic layout in use.
  /// - Throws: ``BridgeError`` with code `badTopic`, `badPayload`, `tooLarge` or
  ///   `unknownVersion`.
  public static func decode(
    topic: some Collection<UInt8>, payload: some Collection<UInt8>,
    userProperties: [(String, String)], map: TopicMap
  ) throws(BridgeError) -> BridgeMessage {
    let (kind, name) = try map.parse(topic)
    return try decode(kind: kind, name: name, payload: payload, userProperties: userProperties)
  }

  /// Reads a publish whose topic is read already (``TopicMap/parse(_:)``, or
  /// ``RecentTopics/parse(_:)``): its kind and name.
  ///
  /// - Throws: ``BridgeError`` with code `badPayload`, `tooLarge` or `unknownVersion`.
  public static func decode(
    kind: TopicMap.Kind, name: NotifyName, payload: some Collection<UInt8>,
    userProperties: [(String, String)]
  ) throws(BridgeError) -> BridgeMessage {
    guard payload.count <= maximumPayload else {
      throw BridgeError(
        .tooLarge,
        "the payload is \(payload.count) bytes; version 1 payloads are at most "
          + "\(maximumPayload)")
    }
    let content = try decodeContent(Array(payload), kind: kind)
    return BridgeMessage(name: name, content: content, stamp: try decodeStamp(userProperties))
  }

  private static func decodeContent(_ payload: [UInt8], kind: TopicMap.Kind) throws(BridgeError)
    -> Content
  {
    if payload.isEmpty { return kind == .post ? .post : .cleared }
    // What every bridge sends for a post, read without splitting.
    if kind == .post && payload == postPayload { return .post }
    let fields = payload.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
    guard let version = decimal(fields[0]) else {
      throw BridgeError(
        .badPayload, "the payload does not start with a format version (a decimal number)")
    }
    guard version == UInt64(formatVersion) else {
      throw BridgeError(
        .unknownVersion, "the payload is format version \(version); this bridge reads version 1")
    }
    switch kind {
    case .post:
      guard fields.count == 1 else {
        throw BridgeError(.badPayload, "a version 1 post payload is '1' or empty")
      }
      return .post
    case .state:
      guard fields.count == 2 || fields.count == 3 else {
        throw BridgeError(.badPayload, "a version 1 state payload is '1 STATE [SET_TIME]'")
      }
      guard let value = decimal(fields[1]) else {
        throw BridgeError(
          .badPayload, "the state is not a decimal number from 0 to 18446744073709551615")
      }
      var time: UInt64?
      if fields.count == 3 {
        guard let parsed = decimal(fields[2]) else {
          throw BridgeError(
            .badPayload, "the set time is not a decimal number of nanoseconds since the epoch")
        }
        time = parsed
      }
      return .state(value, setTime: time)
    }
  }

  private static func decodeStamp(_ properties: [(String, String)]) throws(BridgeError)
    -> BridgeStamp?
  {
    var origins = 0
    var sequences = 0
    var originText = ""
    var sequenceText = ""
    for (name, value) in properties {
      if name == originProperty {
        origins += 1
        originText = value
      } else if name == sequenceProperty {
        sequences += 1
        sequenceText = value
      }
    }
    if origins == 0 && sequences == 0 { return nil }
    guard origins == 1, sequences == 1 else {
      throw BridgeError(
        .badPayload, "\(originProperty) and \(sequenceProperty) must be given once each, together")
    }
    guard let origin = BridgeOrigin(originText) else {
      throw BridgeError(.badPayload, "\(originProperty) is not 32 lower-case hex digits")
    }
    guard let sequence = decimal(sequenceText.utf8), sequence > 0 else {
      throw BridgeError(.badPayload, "\(sequenceProperty) is not a positive decimal number")
    }
    return BridgeStamp(origin: origin, sequence: sequence)
  }

  /// A decimal `UInt64` of digits only, or `nil`.
  static func decimal(_ digits: some Collection<UInt8>) -> UInt64? {
    guard !digits.isEmpty, digits.count <= 20 else { return nil }
    var value: UInt64 = 0
    for digit in digits {
      guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
      let (times, overflow) = value.multipliedReportingOverflow(by: 10)
      let (sum, carry) = times.addingReportingOverflow(UInt64(digit - UInt8(ascii: "0")))
      guard !overflow, !carry else { return nil }
      value = sum
    }
    return value
  }
}
