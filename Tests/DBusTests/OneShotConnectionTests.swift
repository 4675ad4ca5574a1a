import BusTestSupport
import DBus
import DBusCore
import Dispatch
import Glibc
import Testing

@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
struct OneShotConnectionTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  @Test func postsArriveInOrderBeforeFlushReturns() async throws {
    let receiver = try await BusConnection.connect(to: .address(bus.address))
    let inbox = Inbox()
    let subscription = try await receiver.subscribe(
      .signal(interface: testInterface, member: "Tick")
    ) { inbox.append($0) }
    let poster = try OneShotConnection(to: .address(bus.address))
    for sequence in 1...50 { try poster.send(tick("one-shot", UInt64(sequence))) }
    try poster.flush()
    let names = try #require(poster.uniqueName)
    #expect(names.isUnique)
    let received = await inbox.wait(for: 50)
    #expect(received.map { $0.body[1] } == (1...50).map { .uint64(UInt64($0)) })
    #expect(received.allSatisfy { $0.sender == poster.uniqueName })
    _ = subscription
    await receiver.close()
  }

  @Test func callsReturnTheReplyAndThrowTheErrorAsSent() throws {
    let connection = try OneShotConnection(to: .address(bus.address))
    let owner = try connection.call(
      .methodCall(
        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
        interface: "org.freedesktop.DBus", member: "GetNameOwner",
        body: ["org.freedesktop.DBus"]))
    #expect(owner.body == ["org.freedesktop.DBus"])
    let error = #expect(throws: DBusError.self) {
      try connection.call(
        .methodCall(
          destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
          interface: "org.freedesktop.DBus", member: "GetNameOwner", body: ["org.example.Nobody"]))
    }
    #expect(error?.name == .nameHasNoOwner)
    #expect(error?.message.contains("org.example.Nobody") == true)
  }

  @Test func replyToReturnsErrorRepliesAndHugeTimeoutsAreFine() throws {
    let connection = try OneShotConnection(to: .address(bus.address))
    let reply = try connection.reply(
      to: .methodCall(
        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
        interface: "org.freedesktop.DBus", member: "GetNameOwner", body: ["org.example.Nobody"]),
      timeoutMilliseconds: .max)
    #expect(reply.kind == .error)
    #expect(reply.error?.name == .nameHasNoOwner)
    try connection.flush(timeoutMilliseconds: .max)
  }

  @Test func everyUnreachableSocketOfAnAddressIsNamed() throws {
    let address = try BusAddress(
      "unix:path=\(bus.directory)/one;unix:abstract=notifybus-test-none-\(getpid())")
    let error = #expect(throws: DBusError.self) { try OneShotConnection(to: .address(address)) }
    #expect(error?.name == .noServer)
    #expect(
      error?.message
        == "cannot connect to \(address): \(bus.directory)/one: (2) No such file or directory; "
        + "abstract notifybus-test-none-\(getpid()): (111) Connection refused")
  }

  @Test func aMissingSocketIsNoServerNamingIt() {
    let error = #expect(throws: DBusError.self) {
      try OneShotConnection(to: .address(.unixSocket(bus.directory + "/none")))
    }
    #expect(error?.name == .noServer)
    #expect(error?.message.contains("/none: (2) No such file or directory") == true)
  }

  @Test func addressesWithoutAUnixSocketAreRefused() throws {
    let error = #expect(throws: DBusError.self) {
      try OneShotConnection(to: .address(BusAddress("tcp:host=localhost,port=1")))
    }
    #expect(error?.name == .badAddress)
    #expect(error?.message.contains("Unix sockets") == true)
  }

  @Test func theFirstReachableEntryOfAnAddressIsUsed() throws {
    let address = try BusAddress(
      "unix:path=\(bus.directory)/none;tcp:host=x,port=1;\(bus.address.rawValue)")
    let connection = try OneShotConnection(to: .address(address))
    try connection.flush()
    #expect(connection.uniqueName != nil)
  }

  static let misbehaviours: [(answer: String, name: DBusError.Name, reason: String)] = [
    (
      "REJECTED DBUS_COOKIE_SHA1 ANONYMOUS\r\n", .authFailed,
      "(it offers: DBUS_COOKIE_SHA1, ANONYMOUS)"
    ),
    ("ERROR \"no\"\r\n", .authFailed, "it answered ERROR: \"no\""),
    ("OK 1234\r\n", .authFailed, "without a 32-digit hex GUID"),
    ("OK 0123456789abcdef0123456789abcdef\n", .authFailed, "does not end in CR LF"),
    ("HELLO\r\n", .authFailed, "its answer 'HELLO' is not a SASL reply"),
    ("", .disconnected, "closed the connection during authentication"),
    (
      "OK 0123456789abcdef0123456789abcdef\r\nthis is not a D-Bus message", .inconsistentMessage,
      "the first byte is 116, not 'l' or 'B'"
    ),
  ]

  @Test(arguments: misbehaviours.indices)
  func aServerThatMisbehavesGivesAClearError(_ index: Int) throws {
    let (answer, name, reason) = Self.misbehaviours[index]
    let server = try ScriptedServer(directory: bus.directory, answer: Array(answer.utf8))
    let connection = try OneShotConnection(to: .address(.unixSocket(server.path)))
    let error = #expect(throws: DBusError.self) { try connection.flush(timeoutMilliseconds: 5_000) }
    #expect(error?.name == name)
    #expect(error?.message.contains(reason) == true, "\(error?.message ?? "no error")")
  }

  @Test func aServerThatNeverAnswersTimesOut() throws {
    let server = try ScriptedServer(directory: bus.directory, answer: nil)
    let connection = try OneShotConnection(to: .address(.unixSocket(server.path)))
    let start = ContinuousClock.now
    let error = #expect(throws: DBusError.self) { try connection.flush(timeoutMilliseconds: 200) }
    #expect(error?.name == .noReply)
    #expect(ContinuousClock.now - start >= .milliseconds(190))
  }
}

/// A Unix socket that accepts one client, reads what it sends, then answers with fixed
/// bytes and closes; with no answer it holds the connection open until released.
final class ScriptedServer: Sendable {
  let path: String
  private let listener: CInt
  private let done = DispatchSemaphore(value: 0)

  init(directory: String, answer: [UInt8]?) throws {
    path = directory + "/scripted-\(UInt32.random(in: 0...UInt32.max))"
    listener = socket(AF_UNIX, CInt(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    guard bound == 0, listen(listener, 1) == 0 else { throw DBusError(.failed, "cannot listen") }
    let (socket, finished) = (listener, done)
    DispatchQueue.global().async {
      let client = accept(socket, nil, nil)
      var buffer = [UInt8](repeating: 0, count: 4096)
      _ = read(client, &buffer, buffer.count)
      if let answer {
        _ = answer.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
      } else {
        finished.wait()
      }
      close(client)
    }
  }

  deinit {
    done.signal()
    close(listener)
    unlink(path)
  }
}

struct ExternalAuthenticationTests {
  @Test func theRequestClaimsTheUidInHexEncodedDecimal() {
    let request = ExternalAuthentication.request(uid: 1000)
    #expect(request == [0] + Array("AUTH EXTERNAL 31303030\r\nBEGIN\r\n".utf8))
  }

  @Test func anAnswerIsReadOnceItsLineIsWhole() throws {
    let line = Array("OK 0123456789abcdef0123456789ABCDEF\r\n".utf8)
    for length in 0..<line.count {
      #expect(try ExternalAuthentication.answer(in: line[..<length]) == .incomplete)
    }
    let answer = try ExternalAuthentication.answer(in: (line + [UInt8(ascii: "l"), 1])[...])
    #expect(answer == .accepted(guid: "0123456789abcdef0123456789ABCDEF", consumed: line.count))
  }

  @Test func anEndlessOrUnprintableAnswerIsRefused() {
    let endless = [UInt8](repeating: UInt8(ascii: "A"), count: 16_385)
    #expect(throws: DBusError.self) { try ExternalAuthentication.answer(in: endless[...]) }
    let unprintable = Array("OK \u{7}\r\n".utf8)
    let error = #expect(throws: DBusError.self) {
      try ExternalAuthentication.answer(in: unprintable[...])
    }
    #expect(error?.message.contains("not printable ASCII") == true)
  }
}
