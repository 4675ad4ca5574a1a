import DBus
import Testing

/// DBusCore's Swift wire format, held to libdbus (`dbus_message_marshal` and
/// `dbus_message_demarshal`), which reads and writes the same bytes.
struct WireFormatTests {
  static let messages: [Message] = [
    .signal(
      path: "/org/notifybus/Test", interface: "org.notifybus.Test", member: "All",
      body: MessageTests.everyType),
    Message(
      kind: .methodCall, path: "/org/notifybus/Notify1", interface: "org.notifybus.Notify1",
      member: "SetState", destination: "org.notifybus.Notify1", serial: 7, noReplyExpected: true,
      noAutoStart: true, body: [.string("group.example.saved"), .uint64(42)]),
    Message(kind: .methodReturn, destination: ":1.4", serial: 9, replySerial: 7, body: ["ok"]),
    Message(
      kind: .error, errorName: .accessDenied, destination: ":1.4", serial: 10, replySerial: 8,
      body: ["no"]),
    Message(kind: .methodReturn, serial: 3, replySerial: 2),
  ]

  @Test(arguments: messages)
  func swiftWritesTheBytesLibdbusWrites(_ message: Message) throws {
    #expect(try message.marshalled() == message.libdbusMarshalled())
  }

  @Test(arguments: messages)
  func eachReadsWhatTheOtherWrote(_ message: Message) throws {
    let fromLibdbus = try Message(marshalled: message.libdbusMarshalled())
    let fromSwift = try Message(libdbusDemarshalling: message.marshalled())
    #expect(fromLibdbus == fromSwift)
    #expect(fromLibdbus.signature == message.signature)
    #expect(fromLibdbus.noAutoStart == message.noAutoStart)
    #expect(fromLibdbus.replySerial == message.replySerial)
  }

  @Test func bigEndianMessagesAreRead() throws {
    // A signal /a, interface a.b, member C, body (s "hi", u 258), written by hand.
    var bytes: [UInt8] = [UInt8(ascii: "B"), 4, 0, 1, 0, 0, 0, 12, 0, 0, 0, 5, 0, 0, 0, 0]
    func field(_ code: UInt8, _ type: Character, _ text: String) {
      while bytes.count % 8 != 0 { bytes.append(0) }
      bytes += [code, 1, type.asciiValue!, 0]
      if type == "g" {
        bytes += [UInt8(text.utf8.count)] + Array(text.utf8) + [0]
      } else {
        bytes += [0, 0, 0, UInt8(text.utf8.count)] + Array(text.utf8) + [0]
      }
    }
    let fieldsStart = bytes.count
    field(1, "o", "/a")
    field(2, "s", "a.b")
    field(3, "s", "C")
    field(8, "g", "su")
    bytes[15] = UInt8(bytes.count - fieldsStart)
    while bytes.count % 8 != 0 { bytes.append(0) }
    bytes += [0, 0, 0, 2, UInt8(ascii: "h"), UInt8(ascii: "i"), 0, 0, 0, 0, 1, 2]
    let message = try Message(marshalled: bytes)
    #expect(message.kind == .signal)
    #expect(message.serial == 5)
    #expect(message.path == "/a")
    #expect(message.interface == "a.b")
    #expect(message.body == [.string("hi"), .uint32(258)])
    #expect(try Message(libdbusDemarshalling: bytes) == message)
  }

  /// A signal whose body has a boolean, a string and an object path, to corrupt in place.
  static func sample() throws -> [UInt8] {
    try Message.signal(
      path: "/a", interface: "a.b", member: "C",
      body: [.boolean(true), .string("text"), .objectPath("/p")]
    ).marshalled()
  }

  static func offset(of text: String, in bytes: [UInt8]) -> Int {
    let needle = Array(text.utf8)
    return (0...(bytes.count - needle.count)).first {
      Array(bytes[$0..<$0 + needle.count]) == needle
    }!
  }

  static let corruptions: [(String, @Sendable (inout [UInt8]) -> Void)] = [
    ("the first byte is 120, not 'l' or 'B'", { $0[0] = UInt8(ascii: "x") }),
    ("protocol version 2 is not 1", { $0[3] = 2 }),
    ("message type 0 is not one of 1 to 4", { $0[1] = 0 }),
    ("the serial is zero", { $0[8] = 0 }),
    ("but \(try! sample().count + 1) were given", { $0.append(0) }),
    ("a boolean is 2, not 0 or 1", { $0[offset(of: "text", in: $0) - 8] = 2 }),
    ("a string is not valid UTF-8", { $0[offset(of: "text", in: $0)] = 0xFF }),
    ("a string contains a NUL byte", { $0[offset(of: "text", in: $0)] = 0 }),
    ("a string is not NUL-terminated", { $0[offset(of: "text", in: $0) + 4] = 1 }),
    ("padding must be zero bytes", { $0[offset(of: "text", in: $0) + 6] = 1 }),
    ("invalid object path '/-'", { $0[$0.count - 2] = UInt8(ascii: "-") }),
    ("a string of 4100 bytes runs past the end", { $0[offset(of: "text", in: $0) - 3] = 16 }),
    ("a signal message has no interface header field", { $0[offset(of: "a.b", in: $0) - 8] = 10 }),
    ("header field path is not an object path", { $0[offset(of: "a.b", in: $0) - 8] = 1 }),
    (
      "the body is longer than its signature 'bso'",
      {
        $0[4] += 4  // the body length's low byte
        $0 += [0, 0, 0, 0]
      }
    ),
  ]

  @Test(arguments: corruptions.indices)
  func malformedMessagesAreRefusedWithTheReason(_ index: Int) throws {
    let (reason, corrupt) = Self.corruptions[index]
    var bytes = try Self.sample()
    corrupt(&bytes)
    let error = #expect(throws: DBusError.self) { try Message(marshalled: bytes) }
    #expect(error?.name == .inconsistentMessage)
    #expect(error?.message.contains(reason) == true, "\(error?.message ?? "no error")")
  }

  @Test func variantsNestedPastTheLimitAreRefused() throws {
    func nested(_ depth: Int) -> DBusValue {
      (0..<depth).reduce(DBusValue.byte(1)) { inner, _ in .variant(inner) }
    }
    let deepest = Message.signal(path: "/a", interface: "a.b", member: "C", body: [nested(64)])
    #expect(
      try Message(marshalled: deepest.marshalled()) == Message(marshalled: deepest.marshalled()))
    let tooDeep = Message.signal(path: "/a", interface: "a.b", member: "C", body: [nested(65)])
    let error = #expect(throws: DBusError.self) { try Message(marshalled: tooDeep.marshalled()) }
    #expect(error?.message.contains("containers nest deeper than 64") == true)
  }

  /// Every signature a message carries (the body's, each variant's) has the 255-byte limit;
  /// the writer refuses rather than truncate a length byte.
  @Test func signaturesOverTheLimitAreRefusedBeforeWriting() {
    let long = Message.signal(
      path: "/a", interface: "a.b", member: "C",
      body: Array(repeating: .byte(1), count: 256))
    let body = #expect(throws: DBusError.self) { try long.marshalled() }
    #expect(body?.name == .invalidSignature)
    #expect(body?.message == "the body's signature: is 256 bytes long; the limit is 255")
    let variant = Message.signal(
      path: "/a", interface: "a.b", member: "C",
      body: [.variant(.structure(Array(repeating: .byte(1), count: 300)))])
    let inner = #expect(throws: DBusError.self) { try variant.marshalled() }
    #expect(inner?.message.contains("a variant holding '(yyy") == true)
    #expect(inner?.message.contains("is 302 bytes long") == true)
  }

  @Test func unknownHeaderFieldsAreIgnored() throws {
    var bytes = try Message.signal(path: "/a", interface: "a.b", member: "C", destination: ":1.2")
      .marshalled()
    bytes[Self.offset(of: ":1.2", in: bytes) - 8] = 200  // the destination field's code
    let message = try Message(marshalled: bytes)
    #expect(message.destination == nil)
    #expect(message.member == "C")
  }

  @Test func wireLengthNeedsSixteenBytesAndChecksTheLimit() throws {
    let bytes = try Self.sample()
    #expect(try Message.wireLength(ofPrefix: bytes[..<15]) == nil)
    #expect(try Message.wireLength(ofPrefix: bytes[...]) == bytes.count)
    var huge = bytes
    huge[7] = 0x10  // a body of 256 MiB
    #expect(throws: DBusError.self) { try Message.wireLength(ofPrefix: huge[...]) }
  }
}
