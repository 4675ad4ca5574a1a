import BusTestSupport
import DBus
import Synchronization
import Testing

/// Calls an exported object answers at once, on the connection's thread as they are
/// dispatched (`export(at:interface:introspectionXML:immediately:handler:)`).
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
struct ImmediateMethodHandlerTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  func connect() async throws -> BusConnection {
    try await BusConnection.connect(to: .address(bus.address))
  }

  static func call(_ member: MemberName, to name: BusName, _ body: [DBusValue] = []) -> Message {
    .methodCall(
      destination: name, path: "/now", interface: "org.notifybus.Now", member: member,
      body: body)
  }

  @Test func anImmediateAnswerIsTheReplyAndNilLeavesTheCallToTheHandler() async throws {
    let server = try await connect()
    let onThread = Mutex<[Bool]>([])
    let handled = Mutex<[String]>([])
    await server.export(
      at: "/now", interface: "org.notifybus.Now",
      immediately: { call throws(DBusError) in
        onThread.withLock { $0.append(server.isOnConnectionThread) }
        switch call.member?.rawValue {
        case "Later": return nil
        case "Fail": throw DBusError(.invalidArgs, "Fail fails at once")
        default: return call.body
        }
      },
      handler: { call in
        handled.withLock { $0.append(call.member?.rawValue ?? "") }
        return [.string("later")] + call.body
      })
    let name = try #require(await server.uniqueName)
    let client = try await connect()
    // One argument or none (built with libdbus's setters), and several (the marshaller).
    for body: [DBusValue] in [[.uint64(42)], [], ["one"], [.uint32(1), "two", .int16(-3)]] {
      let reply = try await client.call(Self.call("Echo", to: name, body))
      #expect(reply.kind == .methodReturn)
      #expect(reply.body == body)
    }
    let later = try await client.call(Self.call("Later", to: name, [.uint32(7)]))
    #expect(later.body == [.string("later"), .uint32(7)])
    let error = await #expect(throws: DBusError.self) {
      _ = try await client.call(Self.call("Fail", to: name))
    }
    #expect(error?.name == .invalidArgs)
    #expect(error?.message == "Fail fails at once")
    #expect(handled.withLock { $0 } == ["Later"])
    #expect(onThread.withLock { $0 } == Array(repeating: true, count: 6))
    await client.close()
    await server.close()
  }

  /// An answer given at once is built from the libdbus call (`MessageCoding.makeRawReply`)
  /// and one from the task from the decoded call: both say the same, down to the checks
  /// libdbus would stop the program on, which are made first.
  @Test func answersAtOnceAndFromTheTaskAreTheSameReplies() async throws {
    let server = try await connect()
    @Sendable func answer(_ call: Message) throws(DBusError) -> [DBusValue] {
      switch call.member?.rawValue.dropFirst(5) {
      case "Nul": return [.string("a\u{0}b")]
      case "BadName": throw DBusError(DBusError.Name(rawValue: "not a name"), "bad name")
      case "NulError": throw DBusError(.accessDenied, "no\u{0}way")
      case "Empty": throw DBusError(.timeout, "")
      default: return ["done"]
      }
    }
    await server.export(
      at: "/now", interface: "org.notifybus.Now",
      immediately: { call throws(DBusError) in
        call.member?.rawValue.hasPrefix("Later") == true ? nil : try answer(call)
      },
      handler: { call throws(DBusError) in try answer(call) })
    let name = try #require(await server.uniqueName)
    let client = try await connect()
    let clientName = try #require(await client.uniqueName)
    for prefix in ["Now__", "Later"] {
      let done = try await client.call(Self.call(MemberName(unchecked: prefix + "Done"), to: name))
      #expect(done.kind == .methodReturn)
      #expect(done.body == ["done"])
      #expect(done.destination == clientName)
      #expect(done.sender == name)
      func error(_ member: String) async -> DBusError? {
        await #expect(throws: DBusError.self) {
          _ = try await client.call(Self.call(MemberName(unchecked: prefix + member), to: name))
        }
      }
      let nul = await error("Nul")
      #expect(nul?.name == .invalidArgs, "\(prefix)")
      #expect(nul?.message.contains("NUL") == true, "\(prefix): \(nul?.message ?? "")")
      let badName = await error("BadName")
      #expect(badName?.name == .failed, "\(prefix)")
      #expect(badName?.message == "bad name", "\(prefix)")
      let nulError = await error("NulError")
      #expect(nulError?.name == .invalidArgs, "\(prefix)")
      #expect(nulError?.message.contains("NUL") == true, "\(prefix)")
      let empty = await error("Empty")
      #expect(empty?.name == .timeout, "\(prefix)")
      #expect(empty?.message == "", "\(prefix)")
    }
    // The connection survived all of it.
    #expect(try await client.call(Self.call("Now__Done", to: name)).body == ["done"])
    await client.close()
    await server.close()
  }

  /// A call the immediate handler could answer waits while an earlier call of the same
  /// caller is still with the asynchronous handler: it must not overtake it.
  @Test func anImmediateAnswerDoesNotOvertakeTheCallersEarlierCalls() async throws {
    let server = try await connect()
    let seen = Mutex<[UInt32]>([])
    await server.export(
      at: "/now", interface: "org.notifybus.Now",
      immediately: { call in
        guard case .uint32(let index)? = call.body.first, index % 3 != 0 else { return nil }
        seen.withLock { $0.append(index) }
        return []
      },
      handler: { call in
        if case .uint32(let index)? = call.body.first {
          try? await Task.sleep(for: .microseconds(Int(index % 7) * 50))
          seen.withLock { $0.append(index) }
        }
        return []
      })
    let name = try #require(await server.uniqueName)
    let client = try await connect()
    for index in 0..<299 {
      var message = Self.call("Record", to: name, [.uint32(UInt32(index))])
      message.noReplyExpected = true
      try client.send(message)
    }
    // As long as the suite allows: every third call sleeps on the task pool first (see
    // ConnectionTests.oneCallersCallsAreHandledInOrder).
    _ = try await client.call(Self.call("Record", to: name, [.uint32(299)]), timeout: .seconds(150))
    #expect(seen.withLock { $0 } == Array(0..<300))
    await client.close()
    await server.close()
  }

  /// What an immediate handler sends goes out before its reply.
  ///
  /// The signal carries the lower serial, and a caller subscribed to it has seen it when
  /// its call returns (the client dispatches in wire order, the signal's handler first).
  /// notifyd relies on it: a mediated `Post` answered at once sends `Posted`, then the reply.
  @Test func whatAnImmediateHandlerSendsGoesOutBeforeItsReply() async throws {
    let server = try await connect()
    await server.export(
      at: "/now", interface: "org.notifybus.Now",
      immediately: { call throws(DBusError) in
        try server.send(
          .signal(path: "/now", interface: "org.notifybus.Now", member: "Sent", body: call.body))
        return call.body
      },
      handler: { _ in [] })
    let name = try #require(await server.uniqueName)
    let client = try await connect()
    let seen = Mutex<[(index: UInt32, serial: UInt32)]>([])
    let subscription = try await client.subscribe(
      .signal(interface: "org.notifybus.Now", member: "Sent")
    ) { signal in
      guard case .uint32(let index)? = signal.body.first else { return }
      seen.withLock { $0.append((index, signal.serial)) }
    }
    for index in UInt32(0)..<20 {
      let reply = try await client.call(Self.call("Echo", to: name, [.uint32(index)]))
      #expect(reply.body == [.uint32(index)])
      let signal = seen.withLock { $0.last }
      #expect(signal?.index == index, "the reply to call \(index) came before its signal")
      #expect(signal.map { $0.serial < reply.serial } == true)
    }
    await subscription.cancel()
    await client.close()
    await server.close()
  }
}
