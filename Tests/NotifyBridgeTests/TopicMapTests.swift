import NotifyCore
import Testing

@testable import NotifyBridgeCore

struct TopicMapTests {
  let map = try! TopicMap()

  @Test(arguments: [
    ("group.example.saved", "notifybus/post/group/example/saved"),
    ("a/b+c#d", "notifybus/post/a%2Fb%2Bc%23d"),
    ("100%.sure", "notifybus/post/100%25/sure"),
    ("$SYS.x", "notifybus/post/%24SYS/x"),
    ("a.$b", "notifybus/post/a/$b"),
    ("a..b.", "notifybus/post/a//b/"),
    ("tab\there", "notifybus/post/tab%09here"),
    ("del\u{7F}", "notifybus/post/del%7F"),
    ("c1\u{85}", "notifybus/post/c1%C2%85"),
    ("grüße", "notifybus/post/grüße"),
  ])
  func namesMapToTopicsAndBack(name: String, topic: String) throws {
    let notifyName = try NotifyName(name)
    #expect(map.topic(of: notifyName, kind: .post) == topic)
    let (kind, back) = try map.parse(Array(topic.utf8))
    #expect(kind == .post)
    #expect(back == notifyName)
  }

  @Test func stateTopicsAndNamespaceFilters() throws {
    #expect(
      map.topic(of: "group.example.count", kind: .state) == "notifybus/state/group/example/count")
    #expect(map.filter(namespace: "group.example", kind: .post) == "notifybus/post/group/example/#")
    let custom = try TopicMap(prefix: "site/a")
    #expect(custom.topic(of: "x.y", kind: .state) == "site/a/state/x/y")
    #expect(try custom.parse(Array("site/a/state/x/y".utf8)).1 == "x.y")
  }

  @Test(arguments: [
    "other/post/a", "notifybus/posts/a", "notifybus/post", "notifybus/post/a%2",
    "notifybus/post/a%zz",
    "notifybus/post/a%2f", "notifybus/post/a.b", "notifybus/post/%61", "notifybus/post/",
    "notifybus/post/a%00b", "notifybus/post/%FF", "notifybus/post/$x",
  ])
  func badTopicsAreRefused(topic: String) {
    #expect(throws: BridgeError.self) { try map.parse(Array(topic.utf8)) }
  }

  @Test func longNamesAndTooLongNames() throws {
    let longest = String(repeating: "x", count: 511)
    let topic = map.topic(of: try NotifyName(longest), kind: .post)
    #expect(try map.parse(Array(topic.utf8)).1.rawValue == longest)
    let tooLong = "notifybus/post/" + String(repeating: "x", count: 512)
    let error = #expect(throws: BridgeError.self) { try map.parse(Array(tooLong.utf8)) }
    #expect(error?.code == .badTopic)
  }

  @Test(arguments: ["", "$share", "a/+/b", "a/#", "a//b", "a/", "/a", "a\u{1}"])
  func badPrefixesAreRefused(prefix: String) {
    #expect(throws: BridgeError.self) { try TopicMap(prefix: prefix) }
  }

  @Test func everyByteOfANameRoundTrips() throws {
    for byte in UInt8(1)...0x7F {
      let name = try NotifyName("a" + String(decoding: [byte], as: UTF8.self) + "z")
      let topic = map.topic(of: name, kind: .state)
      #expect(try map.parse(Array(topic.utf8)).1 == name, "byte \(byte)")
      #expect(!topic.dropFirst("notifybus/state/".count).contains { "+#\u{0}".contains($0) })
    }
  }
}

struct BridgeMessageTests {
  let map = try! TopicMap()
  let origin = BridgeOrigin("0123456789abcdef0123456789abcdef")!

  func decode(_ topic: String, _ payload: String, _ properties: [(String, String)] = [])
    throws(BridgeError) -> BridgeMessage
  {
    try BridgeMessage.decode(
      topic: Array(topic.utf8), payload: Array(payload.utf8), userProperties: properties, map: map)
  }

  @Test func postsAndStatesRoundTrip() throws {
    let stamp = BridgeStamp(origin: origin, sequence: 7)
    for message in [
      BridgeMessage(name: "group.example.saved", content: .post, stamp: stamp),
      BridgeMessage(
        name: "group.example.count", content: .state(42, setTime: 1_764_428_400_000_000_000)),
      BridgeMessage(name: "g.x", content: .state(.max, setTime: .max), stamp: stamp),
    ] {
      let topic = map.topic(of: message.name, kind: message.kind)
      let back = try BridgeMessage.decode(
        topic: Array(topic.utf8), payload: message.payload, userProperties: message.userProperties,
        map: map)
      #expect(back == message)
    }
  }

  @Test func whatAPlainMosquittoPubSends() throws {
    #expect(try decode("notifybus/post/group/example/saved", "").content == .post)
    #expect(try decode("notifybus/post/group/example/saved", "1").content == .post)
    #expect(
      try decode("notifybus/state/group/example/n", "1 42").content == .state(42, setTime: nil))
    #expect(try decode("notifybus/state/group/example/n", "").content == .cleared)
    #expect(try decode("notifybus/post/a", "1", [("other", "x")]).stamp == nil)
  }

  @Test(arguments: [
    ("notifybus/post/a", "hello", BridgeError.Code.badPayload),
    ("notifybus/post/a", "1 2", .badPayload),
    ("notifybus/post/a", "2", .unknownVersion),
    ("notifybus/post/a", " 1", .badPayload),
    ("notifybus/state/a", "1", .badPayload),
    ("notifybus/state/a", "1 x", .badPayload),
    ("notifybus/state/a", "1 -1", .badPayload),
    ("notifybus/state/a", "1 18446744073709551616", .badPayload),
    ("notifybus/state/a", "1 1 2 3", .badPayload),
    ("notifybus/state/a", "1  1", .badPayload),
    ("notifybus/state/a", "1 1 x", .badPayload),
    ("notifybus/state/a", "3 1 1", .unknownVersion),
    ("notifybus/state/a", String(repeating: "1", count: 65), .tooLarge),
  ])
  func malformedPayloadsAreRefused(topic: String, payload: String, code: BridgeError.Code) {
    let error = #expect(throws: BridgeError.self) { try decode(topic, payload) }
    #expect(error?.code == code)
  }

  @Test func malformedStampsAreRefused() {
    for properties in [
      [(BridgeMessage.originProperty, "xyz"), (BridgeMessage.sequenceProperty, "1")],
      [(BridgeMessage.originProperty, origin.hex)],
      [(BridgeMessage.sequenceProperty, "1")],
      [(BridgeMessage.originProperty, origin.hex), (BridgeMessage.sequenceProperty, "0")],
      [(BridgeMessage.originProperty, origin.hex), (BridgeMessage.sequenceProperty, "x")],
      [
        (BridgeMessage.originProperty, origin.hex), (BridgeMessage.originProperty, origin.hex),
        (BridgeMessage.sequenceProperty, "1"),
      ],
      [
        (BridgeMessage.originProperty, origin.hex.uppercased()),
        (BridgeMessage.sequenceProperty, "1"),
      ],
    ] {
      #expect(throws: BridgeError.self) { try decode("notifybus/post/a", "1", properties) }
    }
  }

  @Test func originsAreRandomAndWellFormed() {
    let first = BridgeOrigin.random()
    let second = BridgeOrigin.random()
    #expect(first != second)
    #expect(BridgeOrigin(first.hex) == first)
    #expect(first.hex.count == 32)
  }
}

struct RecentTopicsTests {
  let map = try! TopicMap()

  /// Repeats, alternations and kinds, each compared with the map itself.
  @Test func whatItRemembersIsWhatTheMapSays() throws {
    var topics = RecentTopics(map)
    let names: [NotifyName] = ["a.b", "a.b", "a/b+c#d", "a.b", "grüße", "grüße", "$SYS.x"]
    for name in names {
      for kind in [TopicMap.Kind.post, .state, .state, .post] {
        let topic = topics.topic(of: name, kind: kind)
        #expect(topic == map.topic(of: name, kind: kind), "\(name) \(kind)")
        let (readKind, readName) = try topics.parse(Array(topic.utf8))
        #expect(readKind == kind)
        #expect(readName == name)
      }
    }
  }

  /// A bad topic fails each time with the map's error, before and after good ones, and
  /// leaves the good one remembered as it was.
  @Test func aBadTopicFailsEveryTimeAsTheMapSays() throws {
    var topics = RecentTopics(map)
    let good = Array("notifybus/post/a/b".utf8)
    let bad = Array("notifybus/post/a%2f".utf8)
    var mapError: BridgeError?
    do { _ = try map.parse(bad) } catch { mapError = error }
    let expected = try #require(mapError)
    for _ in 0..<2 {
      #expect(try topics.parse(good).1 == "a.b")
      for _ in 0..<2 {
        #expect(throws: expected) { try topics.parse(bad) }
      }
      #expect(try topics.parse(good).0 == .post)
    }
    // A topic that differs from the remembered one only in its last byte is read anew.
    #expect(try topics.parse(Array("notifybus/post/a/c".utf8)).1 == "a.c")
  }
}
