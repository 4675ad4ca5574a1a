import BusTestSupport
import CommandLineSupport
import DBus
import NotifyCore
import NotifyToolsCore
import Synchronization
import Testing

/// `notify-post`'s library code, run in this process against a private bus.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
struct NotifyPostTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  func post(_ arguments: [String], bus address: String? = nil) throws {
    try NotifyPost.run(
      NotifyPost.command.parse(["--bus", address ?? bus.address.rawValue] + arguments))
  }

  @Test func postsEveryNameInOrderCountingEachNamesPosts() async throws {
    let receiver = try await BusConnection.connect(to: .address(bus.address))
    let received = Mutex<[Message]>([])
    let names: [NotifyName] = ["group.example.first", "group.example.second"]
    var subscriptions: [SignalSubscription] = []
    for name in names {
      subscriptions.append(
        try await receiver.subscribe(NotifyWire.rule(for: name)) { message in
          received.withLock { $0.append(message) }
        })
    }
    let posted = [names[0], names[1], names[0]]
    try post(posted.map(\.rawValue))
    await waitUntil { received.withLock { $0.count } >= 3 }
    let messages = received.withLock { $0 }
    #expect(messages.map { NotifyWire.postedName(in: $0) } == posted)
    #expect(zip(posted, messages).allSatisfy { NotifyWire.isPosted($1, name: $0) })
    #expect(messages.map { $0.body.last } == [.uint64(1), .uint64(1), .uint64(2)])
    _ = subscriptions
    await receiver.close()
  }

  @Test func anInvalidNameIsAUsageErrorNamingIt() throws {
    let error = #expect(throws: CommandLineError.self) {
      try post(["group.example.fine", String(repeating: "n", count: 512)])
    }
    #expect(error?.code == .validationFailed)
    #expect(error?.message.contains("'\(String(repeating: "n", count: 512))'") == true)
  }

  @Test func aMediatedPostWithoutNotifydSaysSo() throws {
    let error = #expect(throws: ToolError.self) {
      try post(["--mediated", "group.example.nobody"])
    }
    #expect(error?.code == .serviceFailed)
    #expect(
      error?.message.hasPrefix("cannot post 'group.example.nobody' through notifyd: ") == true)
    let refusal = try #require(error?.cause as? NotifyError)
    #expect(refusal.status == .serverNotFound)
    #expect(error?.message.hasSuffix(refusal.message) == true)
  }

  @Test func anUnreachableBusIsARuntimeError() throws {
    let missing = bus.directory + "/missing"
    let error = #expect(throws: ToolError.self) {
      try post(["group.example.lost"], bus: "unix:path=" + missing)
    }
    #expect(error?.code == .busUnreachable)
    #expect(error?.message.hasPrefix("cannot reach the ") == true)
    #expect(error?.cause is DBusError, "\(String(describing: error?.cause))")
  }
}
