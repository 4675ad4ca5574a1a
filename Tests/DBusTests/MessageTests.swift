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
