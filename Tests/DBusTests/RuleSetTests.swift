import BusTestSupport
import DBus
import Testing

/// ``SignalRuleSet``: rules of one shape, one per interface, with one handler.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
struct RuleSetTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  func connect() async throws -> BusConnection {
    try await BusConnection.connect(to: .address(bus.address))
  }

  static let first: InterfaceName = "org.notifybus.Test.First"
  static let second: InterfaceName = "org.notifybus.Test.Second"
  static let other: InterfaceName = "org.notifybus.Test.Other"

  static func tick(_ interface: InterfaceName, _ tag: String, member: MemberName = "Tick")
    -> Message
  {
    .signal(path: testPath, interface: interface, member: member, body: [.string(tag)])
  }

  static func tags(_ messages: [Message]) -> [String] {
    messages.compactMap { $0.body.first?.stringValue }
  }

  @Test func deliversWhatItsRulesMatchOnceEachInOrder() async throws {
    let sender = try await connect()
    let receiver = try await connect()
    let inbox = Inbox()
    let set = receiver.ruleSet(.signal(member: "Tick", path: testPath)) { inbox.append($0) }
    try await set.add(Self.first)
    try await set.add(Self.second)
    // A plain subscription to the same signals does not make the set see them twice.
    let plain = Inbox()
    let subscription = try await receiver.subscribe(.signal(interface: Self.first)) {
      plain.append($0)
    }
    for message in [
      Self.tick(Self.first, "1"), Self.tick(Self.other, "not added"),
      Self.tick(Self.first, "wrong member", member: "Tock"), Self.tick(Self.second, "2"),
      .signal(path: "/elsewhere", interface: Self.first, member: "Tick", body: [.string("path")]),
      Self.tick(Self.first, "3"),
    ] {
      try sender.send(message)
    }
    try await sender.flush()
    #expect(Self.tags(await inbox.wait(for: 3)) == ["1", "2", "3"])
    #expect(Self.tags(await plain.wait(for: 4)) == ["1", "wrong member", "path", "3"])
    #expect(Self.tags(inbox.all) == ["1", "2", "3"])
    let me = try #require(await receiver.uniqueName)
    #expect(try await matchRules(of: me, via: sender) == 3)
    #expect(await receiver.matchRuleCount == 3)
    await subscription.cancel()
    await sender.close()
    await receiver.close()
  }

  /// A set whose handler reads each signal in place sees what a set of messages sees: the
  /// same signals (its template's member and path compared in place), with the same
  /// sender, interface, path, member and arguments, and the same message to keep.
  @Test func anInPlaceSetSeesWhatAMessageSetSees() async throws {
    let sender = try await connect()
    let receiver = try await connect()
    let messages = Inbox()
    let template = MatchRule.signal(member: "Tick", path: testPath)
    let plain = receiver.ruleSet(template) { messages.append($0) }
    let read = Inbox()
    let kept = Inbox()
    let inPlace = receiver.ruleSet(template) { (signal: borrowing ReceivedSignal) in
      let arguments = signal.arguments { arguments in
        var all: [DBusValue] = []
        while let value = arguments.next() { all.append(value) }
        return all
      }
      read.append(
        Message(
          kind: .signal, path: signal.path, interface: signal.interface, member: signal.member,
          sender: signal.sender, body: arguments))
      kept.append(signal.message)
    }
    for set in [plain, inPlace] {
      try await set.add(Self.first)
      try await set.add(Self.second)
    }
    let nested: [DBusValue] = [
      .string("nested"), .structure([.int32(-4), .string("in a struct long enough to be cached")]),
      .array(elementType: "t", [.uint64(1), .uint64(2)]), .bytes([1, 2, 3]),
      .dictionary(keyType: "s", valueType: "v", [.init(.string("k"), .variant(.boolean(true)))]),
    ]
    for message in [
      Self.tick(Self.first, "1"), Self.tick(Self.other, "not added"),
      Self.tick(Self.first, "wrong member", member: "Tock"),
      .signal(path: testPath, interface: Self.second, member: "Tick", body: nested),
      .signal(path: "/elsewhere", interface: Self.first, member: "Tick", body: [.string("path")]),
      .signal(path: testPath, interface: Self.first, member: "Tick", body: []),
      Self.tick(Self.first, "3"),
    ] {
      try sender.send(message)
    }
    let expected = await messages.wait(for: 4)
    #expect(expected.map(\.body) == [[.string("1")], nested, [], [.string("3")]])
    let inPlaceRead = await read.wait(for: 4)
    #expect(inPlaceRead.count == 4)
    for (message, reread) in zip(expected, inPlaceRead) {
      #expect(reread.sender == message.sender && reread.sender != nil)
      #expect(reread.interface == message.interface && reread.member == message.member)
      #expect(reread.path == message.path && reread.body == message.body)
    }
    #expect(kept.all == expected)
    await sender.close()
    await receiver.close()
  }

  /// A template that names more than type, member and path is matched in full: here its
  /// first argument.
  @Test func anInPlaceSetMatchesTheWholeTemplate() async throws {
    let sender = try await connect()
    let receiver = try await connect()
    let read = Inbox()
    var template = MatchRule.signal(member: "Tick", path: testPath)
    template.arguments[0] = "wanted"
    let set = receiver.ruleSet(template) { (signal: borrowing ReceivedSignal) in
      read.append(signal.message)
    }
    try await set.add(Self.first)
    try sender.send(Self.tick(Self.first, "unwanted"))
    try sender.send(Self.tick(Self.first, "wanted"))
    try await sender.flush()
    #expect(Self.tags(await read.wait(for: 1)) == ["wanted"])
    try await settle()
    #expect(Self.tags(read.all) == ["wanted"])
    await sender.close()
    await receiver.close()
  }

  @Test func aRuleStaysUntilItsLastUseIsRemoved() async throws {
    let sender = try await connect()
    let receiver = try await connect()
    let inbox = Inbox()
    let set = receiver.ruleSet(.signal(member: "Tick", path: testPath)) { inbox.append($0) }
    try await set.add(Self.first)
    try await set.add(Self.first)
    try await set.add(Self.second)
    let me = try #require(await receiver.uniqueName)
    #expect(try await matchRules(of: me, via: sender) == 2)
    await set.remove(Self.first)
    try sender.send(Self.tick(Self.first, "still"))
    #expect(Self.tags(await inbox.wait(for: 1)) == ["still"])
    await set.remove(Self.first)
    try await receiver.flush()
    #expect(try await matchRules(of: me, via: sender) == 1)
    try sender.send(Self.tick(Self.first, "gone"))
    try sender.send(Self.tick(Self.second, "second"))
    #expect(Self.tags(await inbox.wait(for: 2)) == ["still", "second"])
    await set.cancel()
    try await receiver.flush()
    #expect(try await matchRules(of: me, via: sender) == 0)
    #expect(await receiver.matchRuleCount == 0)
    // Usable again after a cancel.
    try await set.add(Self.second)
    try sender.send(Self.tick(Self.second, "again"))
    #expect(Self.tags(await inbox.wait(for: 3)) == ["still", "second", "again"])
    await sender.close()
    await receiver.close()
  }

  @Test func rulesComeBackAfterTheBusRestarts() async throws {
    let receiver = try await connect()
    let inbox = Inbox()
    let set = receiver.ruleSet(.signal(member: "Tick", path: testPath)) { inbox.append($0) }
    try await set.add(Self.first)
    bus.kill()
    try bus.start()
    await waitUntil(timeout: .seconds(20)) {
      if case .connected = await receiver.state { return true }
      return false
    }
    let sender = try await connect()
    // The rules are restored right after connecting; a round trip orders this after them.
    try await receiver.flush()
    try sender.send(Self.tick(Self.first, "after"))
    #expect(Self.tags(await inbox.wait(for: 1)) == ["after"])
    await sender.close()
    await receiver.close()
  }

  @Test func aPrefixedSetKeepsSuffixesAndTellsCollidingLookalikesApart() async throws {
    let sender = try await connect()
    let receiver = try await connect()
    let inbox = Inbox()
    let set = receiver.ruleSet(
      .signal(member: "Tick", path: testPath), interfacePrefix: "org.notifybus.Test."
    ) {
      inbox.append($0)
    }
    try await set.add(interfaceSuffix: "First")
    try await set.add(Self.second)
    await #expect(throws: DBusError.self) { try await set.add(interfaceSuffix: "9bad") }
    await #expect(throws: DBusError.self) { try await set.add("org.elsewhere.First") }
    // Interfaces that share the suffix's text under another prefix, or a prefix of it,
    // are not the set's; a plain subscription makes the bus route them here.
    let everyTick = try await receiver.subscribe(.signal(member: "Tick")) { _ in }
    try sender.send(Self.tick("org.notifybus.Tests.First", "other prefix"))
    try sender.send(Self.tick("org.notifybus.Test.Firs", "shorter"))
    try sender.send(Self.tick(Self.first, "1"))
    try sender.send(Self.tick(Self.second, "2"))
    #expect(Self.tags(await inbox.wait(for: 2)) == ["1", "2"])
    await set.remove(interfaceSuffix: "First")
    await set.remove(Self.second)
    await everyTick.cancel()
    #expect(await receiver.matchRuleCount == 0)
    await sender.close()
    await receiver.close()
  }

  @Test func anInvalidTemplateOrAClosedConnectionIsAnError() async throws {
    let receiver = try await connect()
    var template = MatchRule.signal(member: "Tick")
    template.path = testPath
    template.pathNamespace = "/org"
    let invalid = receiver.ruleSet(template) { _ in }
    let error = await #expect(throws: DBusError.self) { try await invalid.add(Self.first) }
    #expect(error?.name == .matchRuleInvalid)
    #expect(await receiver.matchRuleCount == 0)
    await receiver.close()
    let closed = receiver.ruleSet(.signal(member: "Tick")) { _ in }
    let closedError = await #expect(throws: DBusError.self) { try await closed.add(Self.first) }
    #expect(closedError?.name == .disconnected)
  }
}
