import Glibc
import Testing

@testable import Notify

/// The registry's bookkeeping, without a bus: which registrations a post reaches and in
/// which order, whatever order registrations are cancelled in; suspend and resume; pipes
/// shared by many registrations; the per-subject token list behind them.
@Suite struct RegistryTests {
  static let name: NotifyName = "group.example.registry"

  /// A registration whose delivery is an action naming its token, so a post's actions list
  /// the registrations it reached, in order.
  static func registration(_ raw: Int32, _ name: NotifyName = name) -> Registration {
    Registration(
      token: NotifyToken(rawValue: raw), subject: .name(name), delivery: .immediate { _ in })
  }

  /// The tokens a post of `name` reaches.
  static func reached(_ registry: inout Registry, _ name: NotifyName = name) -> [Int32] {
    registry.post(name, to: .name(name), sender: nil, sequence: nil, resynchronization: false)
      .compactMap { action in
        if case .immediate(_, let token) = action { return token.rawValue }
        return nil
      }
  }

  /// A generator with a fixed seed, so that a failure repeats.
  struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
  }

  @Test(arguments: ["in order", "reversed", "shuffled", "interleaved with registrations"])
  func aPostReachesExactlyTheLiveRegistrationsInTheOrderTheyWereMade(_ order: String) {
    var registry = Registry()
    var random = SplitMix(state: 18)
    var live: [Int32] = []
    var next: Int32 = 1
    for _ in 0..<600 {
      registry.insert(Self.registration(next))
      live.append(next)
      next += 1
    }
    var victims = live
    switch order {
    case "reversed": victims.reverse()
    case "shuffled", "interleaved with registrations": victims.shuffle(using: &random)
    default: break
    }
    for (step, victim) in victims.enumerated() {
      let removal = registry.remove(NotifyToken(rawValue: victim))
      #expect(removal?.registration.token.rawValue == victim)
      live.removeAll { $0 == victim }
      if order == "interleaved with registrations" && step % 3 == 0 {
        registry.insert(Self.registration(next))
        live.append(next)
        next += 1
      }
      if step % 37 == 0 || live.count < 5 {
        let reachedNow = Self.reached(&registry)
        #expect(reachedNow == live, "after \(step + 1) cancels")
      }
    }
    let reachedAtEnd = Self.reached(&registry)
    #expect(reachedAtEnd == live)
    for token in live { _ = registry.remove(NotifyToken(rawValue: token)) }
    #expect(registry.registrations.isEmpty)
    #expect(registry.subjects.isEmpty, "the name goes with its last registration")
    let reachedAfterAll = Self.reached(&registry)
    #expect(reachedAfterAll.isEmpty)
  }

  @Test func cancellingTwiceOrAnUnknownTokenRemovesNothing() {
    var registry = Registry()
    registry.insert(Self.registration(1))
    registry.insert(Self.registration(2))
    let first = registry.remove(NotifyToken(rawValue: 1))
    let again = registry.remove(NotifyToken(rawValue: 1))
    let unknown = registry.remove(NotifyToken(rawValue: 99))
    #expect(first != nil && again == nil && unknown == nil)
    let reached = Self.reached(&registry)
    #expect(reached == [2])
    #expect(registry.subjects[.name(Self.name)]?.tokens.count == 1)
  }

  @Test func namesKeepTheirOwnRegistrations() {
    var registry = Registry()
    let other: NotifyName = "group.example.other"
    for raw in Int32(1)...100 {
      registry.insert(Self.registration(raw, raw % 2 == 0 ? other : Self.name))
    }
    for raw in stride(from: Int32(1), through: 100, by: 4) {
      _ = registry.remove(NotifyToken(rawValue: raw))
    }
    let reachedFirst = Self.reached(&registry)
    #expect(reachedFirst == Array(stride(from: 3, through: 99, by: 4)))
    let reachedOther = Self.reached(&registry, other)
    #expect(reachedOther == Array(stride(from: 2, through: 100, by: 2)))
  }

  @Test func suspendedRegistrationsDeliverOnceOnTheirLastResumeAndOthersAtOnce() throws {
    var registry = Registry()
    for raw in Int32(1)...300 { registry.insert(Self.registration(raw)) }
    let suspended = Set(stride(from: Int32(1), through: 300, by: 3))
    for raw in suspended {
      registry.registrations[NotifyToken(rawValue: raw)]?.suspendCount += 2
    }
    for raw in stride(from: Int32(2), through: 300, by: 3) {
      _ = registry.remove(NotifyToken(rawValue: raw))
    }
    let awake = (Int32(1)...300).filter { !suspended.contains($0) && $0 % 3 != 2 }
    let reachedAwake = Self.reached(&registry)
    #expect(reachedAwake == awake)
    let reachedAgain = Self.reached(&registry)
    #expect(reachedAgain == awake, "posts while suspended coalesce")
    for raw in suspended.sorted() {
      let firstResume = try registry.resume(NotifyToken(rawValue: raw))
      #expect(firstResume.isEmpty, "still suspended once")
      let actions = try registry.resume(NotifyToken(rawValue: raw))
      #expect(Array(actions).count == 1, "token \(raw) delivers its deferred post once")
      let extraResume = try registry.resume(NotifyToken(rawValue: raw))
      #expect(extraResume.isEmpty, "not suspended: nothing")
    }
    let reachedResumed = Self.reached(&registry)
    #expect(reachedResumed == (Int32(1)...300).filter { $0 % 3 != 2 })
  }

  @Test func registrationsSharingAPipeCloseItWithTheLastInAnyOrder() throws {
    var fds: [CInt] = [-1, -1]
    #expect(pipe(&fds) == 0)
    _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
    var registry = Registry()
    let count = 500
    registry.pipes[fds[0]] = Registry.Pipe(write: fds[1], users: count)
    for raw in 1...Int32(count) {
      registry.insert(
        Registration(
          token: NotifyToken(rawValue: raw), subject: .name(Self.name),
          delivery: .fileDescriptor(write: fds[1], read: fds[0])))
    }
    var order = Array(1...Int32(count))
    var random = SplitMix(state: 7)
    order.shuffle(using: &random)
    for (step, raw) in order.enumerated() {
      #expect(fcntl(fds[0], F_GETFD) != -1, "open while \(count - step) registrations use it")
      let removal = registry.remove(NotifyToken(rawValue: raw))
      #expect(removal != nil)
      if step == count / 2 {
        // A post writes each live token once, in the order they were made.
        _ = Self.reached(&registry)
        let live = (1...Int32(count)).filter { !order.prefix(step + 1).contains($0) }
        var bytes = [UInt8](repeating: 0, count: live.count * 4 + 4)
        #expect(read(fds[0], &bytes, bytes.count) == live.count * 4)
        let written = (0..<live.count).map { Self.bigEndian(bytes, at: $0 * 4) }
        #expect(written == live)
      }
    }
    #expect(fcntl(fds[0], F_GETFD) == -1, "closed with its last registration")
    #expect(registry.pipes.isEmpty)
  }

  static func bigEndian(_ bytes: [UInt8], at offset: Int) -> Int32 {
    var value: UInt32 = 0
    for byte in bytes[offset..<offset + 4] { value = value << 8 | UInt32(byte) }
    return Int32(bitPattern: value)
  }

  @Test func tokenListCompactsAndKeepsOrder() {
    var list = TokenList()
    #expect(list.isEmpty)
    for raw in Int32(1)...10 { list.append(NotifyToken(rawValue: raw)) }
    #expect(list.count == 10)
    var compactions = 0
    var live = Set(Int32(1)...10)
    for raw in Int32(1)...9 {
      live.remove(raw)
      if list.remove() {
        compactions += 1
        list = TokenList(list.filter { live.contains($0.rawValue) })
        #expect(Array(list).count == live.count, "compaction drops every removed token")
      }
    }
    #expect(compactions >= 1)
    #expect(list.count == 1)
    #expect(Array(list).map(\.rawValue).filter(live.contains) == [10])
    let wantsCompaction = list.remove()
    #expect(!wantsCompaction)
    #expect(list.isEmpty && Array(list).isEmpty, "an emptied list holds nothing")
  }

  /// The gap check keeps the last post's stream apart from its table: it answers as a
  /// plain table of every stream's last count does, whatever order posts of several
  /// posters and names come in (runs of one stream, interleaved ones, counts that jump,
  /// repeat or start over).
  @Test func nameSequencesSeeTheGapsATableOfEveryStreamSees() throws {
    var sequences = NameSequences()
    var reference: [String: UInt64] = [:]
    var random = SplitMix(state: 18)
    let senders = [":1.7", ":1.42", ":1.1234567890123"]
    let names: [NotifyName] = ["group.example.a", "group.example.b", "group.example.long.name.c"]
    var counts: [String: UInt64] = [:]
    var gaps = 0
    for step in 0..<20_000 {
      // Runs of one stream, as a flood from one poster brings them.
      let stream = Int(random.next() % 9)
      let sender = senders[stream % 3]
      let name = names[stream / 3]
      let key = sender + " " + name.rawValue
      let last = counts[key] ?? 0
      let count: UInt64 =
        switch random.next() % 10 {
        case 0: last + 2 + random.next() % 3  // posts lost
        case 1: last  // the same signal seen twice
        case 2: 1  // the poster started over
        default: last + 1
        }
      counts[key] = count
      let expected = reference.updateValue(count, forKey: key).map { count > $0 && count - $0 > 1 }
      let gap = sequences.isGap(from: sender, name: name, count: count)
      #expect(gap == (expected ?? false), "step \(step): \(key) \(last) → \(count)")
      if gap { gaps += 1 }
    }
    #expect(gaps > 500)
    #expect(sequences.count == 9)
    sequences.removeAll()
    #expect(sequences.count == 0)
    let afterForgetting = sequences.isGap(from: senders[0], name: names[0], count: 100)
    #expect(!afterForgetting, "forgotten: a start")
  }

  /// More streams than the table holds: it starts over, which can miss a gap but never
  /// invents one, and never holds more than its limit.
  @Test func nameSequencesStartOverWhenFullAndInventNoGap() {
    var sequences = NameSequences()
    let name: NotifyName = "group.example.many"
    for round in UInt64(1)...3 {
      for poster in 0..<(NameSequences.maximumTracked + 100) {
        let gap = sequences.isGap(from: ":1.\(poster)", name: name, count: round)
        #expect(!gap)
        #expect(sequences.count <= NameSequences.maximumTracked)
      }
    }
    // Still tracked after all that: the stream just seen.
    _ = sequences.isGap(from: ":1.5", name: name, count: 10)
    let next = sequences.isGap(from: ":1.5", name: name, count: 11)
    let skipped = sequences.isGap(from: ":1.5", name: name, count: 13)
    #expect(!next && skipped)
  }
}
