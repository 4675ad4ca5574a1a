package import NotifyCore

/// A ``TopicMap`` that remembers the last name it mapped to a topic and the last topic it
/// read back, each way once.
///
/// A bridge carries the same few names again and again: on the hop's path, building a
/// topic byte by byte (escaping every level) and reading one (unescaping, checking the
/// name and that the topic is the name's one canonical topic) are then done once per
/// name, and a repeat costs a comparison. A topic that fails to read is not remembered,
/// so it fails each time with the same error.
package struct RecentTopics: Sendable {
  /// The mapping.
  package let map: TopicMap
  private var lastName: NotifyName?
  private var lastKind = TopicMap.Kind.post
  private var lastTopic = ""
  private var lastRead: [UInt8] = []
  private var lastParsed: (kind: TopicMap.Kind, name: NotifyName)?

  /// Remembers nothing yet.
  package init(_ map: TopicMap) { self.map = map }

  /// The topic of `name`: ``TopicMap/topic(of:kind:)``.
  package mutating func topic(of name: NotifyName, kind: TopicMap.Kind) -> String {
    if kind == lastKind, let lastName, lastName == name { return lastTopic }
    lastTopic = map.topic(of: name, kind: kind)
    lastName = name
    lastKind = kind
    return lastTopic
  }

  /// Reads a received topic: ``TopicMap/parse(_:)``.
  package mutating func parse(_ topic: [UInt8]) throws(BridgeError) -> (TopicMap.Kind, NotifyName) {
    if let lastParsed, topic == lastRead { return lastParsed }
    let parsed = try map.parse(topic)
    lastRead = topic
    lastParsed = parsed
    return parsed
  }
}
