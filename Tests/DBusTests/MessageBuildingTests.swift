import BusTestSupport
import DBus
import Glibc
import SystemSupport
import Testing

/// How `BusConnection` builds the libdbus messages it sends: the Swift marshaller's bytes,
/// demarshalled by libdbus, with the serial left to the sending connection.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
struct MessageBuildingTests {
  static let messages: [Message] =
    WireFormatTests.messages + [
      .signal(
        path: "/org/notifybus/Notify1", interface: "org.notifybus.Notify1.N.group.example.saved",
        member: "Posted", body: [.string("group.example.saved"), .uint64(1), .uint64(1)]),
      Message(
        kind: .methodCall, path: "/", member: "Ping", destination: ":1.9", sender: ":1.2"),
      .signal(path: "/a", interface: "a.b", member: "Empty", destination: ":1.3"),
    ]

  /// Byte for byte what libdbus's own setters and iterators build, as C code builds it.
  @Test(arguments: messages)
  func theBytesAreThoseLibdbusBuildsItself(_ message: Message) throws {
    var numbered = message
    numbered.serial = 77
    let built = try numbered.builtForSending()
    #expect(built.serial == 77)
    #expect(built.bytes == (try numbered.libdbusMarshalled()))
    #expect(try Message(marshalled: built.bytes) == Message(marshalled: numbered.marshalled()))
  }

  /// A message that was never sent has no serial; libdbus's copy has none either, so the
  /// connection numbers it.
  @Test(arguments: messages.filter { $0.serial == 0 })
  func aMessageWithoutASerialLeavesItToTheConnection(_ message: Message) throws {
    let built = try message.builtForSending()
    #expect(built.serial == 0)
    #expect(built.bytes[8..<12] == [0, 0, 0, 0])
    var first = try message.libdbusMarshalled()  // written with serial 1
    first.replaceSubrange(8..<12, with: [0, 0, 0, 0])
    #expect(built.bytes == first)
  }

  static let call = Message(
    kind: .methodCall, path: "/org/notifybus/Notify1", interface: "org.notifybus.Notify1",
    member: "GetState", destination: "org.notifybus.Notify1", sender: ":1.41", serial: 9,
    body: [.string("bench.state")])

  /// `GetState` as `NotifyCenter` sends it: no sender, one string.
  static let getState = Message.methodCall(
    destination: "org.notifybus.Notify1", path: "/org/notifybus/Notify1",
    interface: "org.notifybus.Notify1", member: "GetState", body: ["bench.state"])

  /// Messages `BusConnection` builds with libdbus's setters (at most one basic argument)
  /// or through the marshaller (the rest, and names made unchecked that are not valid),
  /// each with the way it must be built.
  static let eitherWay: [(Message, MessageCoding.BuildPath)] = [
    (getState, .libdbus),
    (call, .marshaller),  // a sender
    (
      Message.methodCall(
        destination: "org.notifybus.Notify1", path: "/org/notifybus/Notify1",
        interface: "org.notifybus.Notify1", member: "SetState", body: ["name", .uint64(1)]),
      .marshaller
    ),
    (.methodCall(destination: nil, path: "/", interface: nil, member: "Ping"), .libdbus),
    (
      Message(
        kind: .methodCall, path: "/a", interface: "a.b", member: "C", destination: ":1.9",
        replySerial: 7, body: ["x"]),
      .marshaller
    ),
    (
      Message(
        kind: .methodCall, path: "/a", interface: "a.b", member: "C",
        errorName: DBusError.Name(rawValue: "org.example.Odd"), destination: ":1.9"),
      .marshaller
    ),
    (
      Message(
        kind: .methodCall, path: "/a", interface: "a.b", member: "C", destination: ":1.9",
        noAutoStart: true, body: [.uint32(3)]),
      .libdbus
    ),
    (
      Message(
        kind: .methodCall, path: "/a", member: "C", destination: ":1.9",
        noReplyExpected: true, body: [.double(0.25)]),
      .libdbus
    ),
    (.signal(path: "/a", interface: "a.b", member: "One", body: [.double(0.5)]), .marshaller),
    (.signal(path: "/a", interface: "a.b", member: "Path", body: [.objectPath("/a")]), .marshaller),
    (call.makeReply(body: [.uint64(42)]), .libdbus),
    (call.makeReply(), .libdbus),
    (call.makeReply(body: [.boolean(true)]), .libdbus),
    (call.makeReply(body: [.string("a reply of one string, longer than fifteen bytes")]), .libdbus),
    (call.makeReply(body: [.objectPath("/a/b"), .signature("a{sv}")]), .marshaller),
    (
      call.makeReply(body: [
        .array(elementType: "(stt)", [.structure([.string("x"), .uint64(1), .uint64(2)])])
      ]),
      .marshaller
    ),
    (call.makeReply(body: [.bytes([1, 2, 3])]), .marshaller),
    (call.makeReply(body: [.variant(.int32(-1))]), .marshaller),
    (call.makeErrorReply(DBusError(.invalidArgs, "GetState takes (s name)")), .libdbus),
    (call.makeErrorReply(DBusError(.accessDenied, "")), .libdbus),
  ]

  /// Each message takes the way it must (so a change that sends `GetState` or its reply to
  /// the marshaller, which costs thousands of instructions a call, fails here), and whichever
  /// way it is built its bytes are the same, and the connection numbers it when it has none.
  @Test(arguments: eitherWay)
  func aMessageIsBuiltToTheSameBytesEitherWay(
    _ message: Message, _ path: MessageCoding.BuildPath
  ) throws {
    #expect(MessageCoding.buildPath(message) == path)
    let built = try message.builtForSending()
    #expect(built.serial == message.serial)
    #expect(built.bytes == (try message.builtThroughMarshaller().bytes))
    var numbered = message
    numbered.serial = 5
    #expect(try numbered.builtForSending() == numbered.builtThroughMarshaller())
  }

  /// A one-argument message with a name made unchecked that is not valid is refused with
  /// an error, as the marshaller's path refuses it, not by libdbus's setters stopping the
  /// program.
  @Test func anInvalidUncheckedNameInASmallMessageIsRefused() {
    let bad = [
      Message.methodCall(
        destination: BusName(unchecked: "no..name"), path: "/a", interface: "a.b", member: "C",
        body: ["x"]),
      .methodCall(
        destination: nil, path: ObjectPath(unchecked: "/trailing/"), interface: "a.b",
        member: "C"),
      .methodCall(
        destination: nil, path: "/a", interface: "a.b", member: MemberName(unchecked: "a.b")),
      Message(kind: .methodReturn, destination: BusName(unchecked: "x..y"), replySerial: 3),
    ]
    for message in bad {
      #expect(MessageCoding.buildPath(message) == .marshaller, "\(message)")
      let error = #expect(throws: DBusError.self) { try message.builtForSending() }
      #expect(error?.message.hasPrefix("libdbus refused the message: ") == true, "\(message)")
    }
  }

  @Test func aNameMadeUncheckedThatLibdbusRefusesIsReportedNotSent() async throws {
    let bad = Message.signal(
      path: "/a", interface: InterfaceName(unchecked: "nodots"), member: "C", body: ["x"])
    let error = #expect(throws: DBusError.self) { try bad.builtForSending() }
    #expect(error?.name == .invalidArgs)
    #expect(error?.message.hasPrefix("libdbus refused the message: ") == true, "\(error!)")
    let bus = try PrivateBus()
    let sender = try await BusConnection.connect(to: .address(bus.address))
    let sent = #expect(throws: DBusError.self) { try sender.send(bad) }
    #expect(sent?.message == error?.message)
    // The connection is unharmed.
    try sender.send(.signal(path: "/a", interface: "a.b", member: "C"))
    try await sender.flush()
    await sender.close()
  }

  @Test func malformedMessagesAreStillRefusedBeforeLibdbus() {
    let noMember = Message(kind: .methodCall, path: "/a")
    let missing = #expect(throws: DBusError.self) { try noMember.builtForSending() }
    #expect(missing?.message == "a method call needs a path and a member")
    let nul = Message.signal(path: "/a", interface: "a.b", member: "C", body: ["a\u{0}b"])
    let inside = #expect(throws: DBusError.self) { try nul.builtForSending() }
    #expect(inside?.message == "a D-Bus string must not contain a NUL character")
  }

  /// Signals, method calls and the replies libdbus writes itself (to `Peer.Ping`) share one
  /// counter per connection: every serial a receiver sees is new, and replies still find
  /// their calls.
  @Test func serialsComeFromTheSendingConnectionAndStayUnique() async throws {
    let bus = try PrivateBus()
    let sender = try await BusConnection.connect(to: .address(bus.address))
    let receiver = try await BusConnection.connect(to: .address(bus.address))
    let senderName = try #require(await sender.uniqueName)
    let inbox = Inbox()
    let subscription = try await receiver.subscribe(
      .signal(interface: testInterface, member: "Tick")
    ) { inbox.append($0) }
    var pingReplies: [UInt32] = []
    for round in 0..<5 {
      for index in 0..<20 { try sender.send(tick("serial", UInt64(round * 20 + index))) }
      // Answered by the sender's libdbus itself, numbered from the same counter.
      let reply = try await receiver.call(
        .methodCall(
          destination: senderName, path: "/", interface: "org.freedesktop.DBus.Peer",
          member: "Ping"))
      pingReplies.append(reply.serial)
      try await sender.flush()  // a call of the sender's own, matched to its reply
    }
    let received = await inbox.wait(for: 100)
    #expect(received.map { $0.body[1].uint64Value ?? 0 } == (0..<100).map(UInt64.init))
    let serials = received.map(\.serial)
    #expect(serials.allSatisfy { $0 > 1 }, "serial 1 is the sender's Hello")
    #expect(zip(serials, serials.dropFirst()).allSatisfy { $0 < $1 }, "\(serials)")
    #expect(Set(serials + pingReplies).count == serials.count + pingReplies.count)
    await subscription.cancel()
    await sender.close()
    await receiver.close()
  }

  /// What `dbus-monitor` prints for a signal sent this way: every argument, as sent.
  @Test func dbusMonitorSeesTheSignalAsSent() async throws {
    let bus = try PrivateBus()
    let monitor = try Subprocess.spawn(
      "dbus-monitor",
      arguments: [
        "--address", bus.address.rawValue, "type='signal',interface='org.notifybus.Test'",
      ],
      captureOutput: true)
    defer {
      monitor.kill()
      monitor.wait()
    }
    // dbus-monitor is monitoring once it has given up the name the bus gave it.
    while let line = monitor.readLine(milliseconds: 10_000), !line.contains("member=NameLost") {}
    let sender = try await BusConnection.connect(to: .address(bus.address))
    try sender.send(
      .signal(
        path: testPath, interface: testInterface, member: "All",
        body: [
          .string("grüße"), .uint64(.max), .int32(-7), .boolean(true), .objectPath("/p/q"),
          .dictionary(["k": .string("v")]), .bytes([1, 2]),
        ]))
    var lines: [String] = []
    while let line = monitor.readLine(milliseconds: 5000) {
      lines.append(line)
      if line.contains("array of bytes") { break }
    }
    let text = lines.joined(separator: "\n")
    #expect(text.contains("path=/org/notifybus/Test; interface=org.notifybus.Test; member=All"))
    for expected in [
      "string \"grüße\"", "uint64 18446744073709551615", "int32 -7", "boolean true",
      "object path \"/p/q\"", "string \"k\"", "variant", "string \"v\"", "array of bytes",
    ] {
      #expect(text.contains(expected), "\(expected) in \(text)")
    }
    await sender.close()
  }
}
