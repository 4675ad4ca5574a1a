import DBus
import Testing

struct MessageTests {
  static let everyType: [DBusValue] = [
    .byte(255), .boolean(true), .int16(-2), .uint16(65535), .int32(-70_000), .uint32(4_000_000_000),
    .int64(.min), .uint64(.max), .double(3.25), .string("grüße 👋"), .objectPath("/a/b"),
    .signature("a{sv}"), .bytes([0, 1, 2, 255]), .bytes([]),
    .array(elementType: "s", ["a", "b"]), .array(elementType: "(is)", []),
    .dictionary(["title": .string("Hello"), "count": .uint32(3)]),
    .dictionary(
      keyType: "u", valueType: "as", [.init(.uint32(1), .array(elementType: "s", ["x"]))]),
    .structure([.int32(1), .structure([.string("nested")])]),
    .variant(.variant(.array(elementType: "y", [.byte(1)]))),
  ]

  @Test func everyTypeSurvivesMarshalling() throws {
    let message = Message.signal(
      path: "/org/notifybus/Test", interface: "org.notifybus.Test", member: "All",
      body: Self.everyType)
    let bytes = try message.marshalled()
    let decoded = try Message(marshalled: bytes)
    // libdbus reads an `ay` inside a variant or array as bytes, our compact form.
    var expected = Self.everyType
    expected[19] = .variant(.variant(.bytes([1])))
    #expect(decoded.body == expected)
    #expect(decoded.signature == message.signature)
    #expect(decoded.path == message.path)
    #expect(decoded.member == "All")
    #expect(decoded.serial == 1)
  }

  /// `hasSignature` answers what comparing the built signature answers, for flat bodies
  /// (compared code by code) and bodies with containers alike.
  @Test func hasSignatureAgreesWithTheBuiltSignature() {
    let expectations: [StaticString] = ["", "s", "st", "ts", "stt", "ay", "as", "sas", "v", "(st)"]
    let bodies: [[DBusValue]] = [
      [], ["name"], ["name", .uint64(1)], [.uint64(1), "name"], ["name", .uint64(1), .uint64(2)],
      [.bytes([1])], [.array(elementType: "s", ["a"])], ["name", .array(elementType: "s", [])],
      [.variant(.uint64(1))], [.structure(["name", .uint64(1)])], [.objectPath("/a")],
    ]
    for body in bodies {
      let message = Message.signal(path: "/a", interface: "a.b", member: "C", body: body)
      for expected in expectations {
        #expect(
          message.hasSignature(expected) == (message.signature.rawValue == "\(expected)"),
          "\(body) against '\(expected)'")
      }
    }
  }

  @Test func aFlatBodyIsCheckedForItsSignaturesLength() throws {
    func signal(_ body: [DBusValue]) -> Message {
      .signal(path: "/a", interface: "a.b", member: "C", body: body)
    }
    // 255 one-code values make the longest signature there is; one more is too long, as
    // are 128 byte arrays (`ay` each).
    try signal(Array(repeating: .uint32(1), count: 255)).validate()
    #expect(throws: DBusError.self) {
      try signal(Array(repeating: .uint32(1), count: 256)).validate()
    }
    try signal(Array(repeating: .bytes([1]), count: 127) + [.byte(1)]).validate()
    #expect(throws: DBusError.self) {
      try signal(Array(repeating: .bytes([1]), count: 128)).validate()
    }
    #expect(throws: DBusError.self) {
      try signal([.string("nul \u{0} inside")]).validate()
    }
  }

  @Test func marshalledBytesAreTheWireFormat() throws {
    let bytes = try Message.signal(
      path: "/a", interface: "a.b", member: "C", body: [.string("x")]
    ).marshalled()
    #expect(bytes[0] == UInt8(ascii: "l"))  // little endian
    #expect(bytes[1] == 4)  // signal
    #expect(bytes[3] == 1)  // protocol version
    #expect(bytes.count % 8 == 6)  // header padded to 8, body is "x" as 4+1+1 bytes
  }

  @Test func truncatedMessagesAreRejectedAtEveryLength() throws {
    let bytes = try Message.signal(
      path: "/a", interface: "a.b", member: "C", body: Self.everyType
    ).marshalled()
    for length in 0..<bytes.count {
      #expect(throws: DBusError.self) { try Message(marshalled: Array(bytes[..<length])) }
    }
  }

  @Test func corruptedMessagesAreRejectedOrReadButNeverCrash() throws {
    let bytes = try Message.signal(
      path: "/a", interface: "a.b", member: "C", body: Self.everyType
    ).marshalled()
    var rejected = 0
    for index in bytes.indices {
      var corrupted = bytes
      corrupted[index] ^= 0xA5
      if (try? Message(marshalled: corrupted)) == nil { rejected += 1 }
    }
    #expect(rejected > bytes.count / 2)
  }

  @Test func garbageIsRejectedWithAReason() {
    let error = #expect(throws: DBusError.self) {
      try Message(marshalled: Array("this is not a D-Bus message".utf8))
    }
    #expect(error?.name == .inconsistentMessage)
    #expect(error?.message == "malformed message: the first byte is 116, not 'l' or 'B'")
  }

  @Test func malformedValuesAreRefusedBeforeLibdbusSeesThem() {
    let cases: [(DBusValue, String)] = [
      (.array(elementType: "s", [.int32(1)]), "array of 's' holds a value of type 'i'"),
      (.structure([]), "a struct needs a field"),
      (.string("nul\u{0}inside"), "must not contain a NUL"),
      (.dictionary(keyType: "v", valueType: "s", []), "key type 'v' is not a basic type"),
      (.array(elementType: "ss", []), "is not one complete type"),
    ]
    for (value, reason) in cases {
      let message = Message.signal(path: "/a", interface: "a.b", member: "C", body: [value])
      let error = #expect(throws: DBusError.self) { try message.marshalled() }
      #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
    }
  }

  @Test func messagesMissingRequiredFieldsAreRefused() {
    let noInterface = Message(kind: .signal, path: "/a", member: "C")
    #expect(throws: DBusError.self) { try noInterface.marshalled() }
    let replyWithoutSerial = Message(kind: .methodReturn)
    #expect(throws: DBusError.self) { try replyWithoutSerial.marshalled() }
  }
}

struct DecodingSupportTests {
  @Test func theStringCacheGivesBackExactlyTheBytesItWasHanded() {
    var cache = StringCache(capacity: 2)
    let texts = [
      "org.notifybus.Notify1.N.example.one", "org.notifybus.Notify1.N.example.two",
      "org.notifybus.Notify1.N.example.one", "short", "org.notifybus.Notify1.N.example.owt",
      "org.notifybus.Notify1.N.example.two", "grüße, 👋 and a little more", "",
    ]
    for _ in 0..<3 {
      for text in texts { #expect(text.withCString { cache.string($0) } == text) }
    }
    var none = StringCache(capacity: 0)
    #expect(texts[0].withCString { none.string($0) } == texts[0])
  }

  @Test func anInlineListIteratesWhatItHolds() {
    var list = InlineList<Int>()
    #expect(Array(list).isEmpty)
    list.append(1)
    #expect(Array(list) == [1])
    list.append(2)
    list.append(3)
    #expect(Array(list) == [1, 2, 3])
    list.removeAll(2)
    #expect(Array(list) == [1, 3])
    list.removeAll(1)
    #expect(Array(list) == [3])
    list.removeAll(3)
    #expect(list.isEmpty && Array(list).isEmpty)
  }
}
