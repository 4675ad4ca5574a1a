import NotifyCore
import Testing

@testable import NotifyBridgeCore

struct BridgeConfigurationTests {
  @Test(arguments: [
    ("mqtt://broker", "broker", 1883, false),
    ("mqtt://broker:1999", "broker", 1999, false),
    ("mqtt://127.0.0.1:1883/", "127.0.0.1", 1883, false),
    ("mqtts://broker.example", "broker.example", 8883, true),
    ("mqtt://[::1]:1884", "::1", 1884, false),
  ])
  func brokerURLs(text: String, host: String, port: Int, tls: Bool) throws {
    let address = try BrokerAddress(parsing: text)
    #expect(address.host == host)
    #expect(address.port == port)
    #expect(address.usesTLS == tls)
  }

  @Test(arguments: [
    ("broker:1883", "must start with mqtt://"),
    ("http://broker", "must start with mqtt://"),
    ("mqtt://", "names no host"),
    ("mqtt://:1883", "names no host"),
    ("mqtt://broker:0", "port must be a number from 1 to 65535"),
    ("mqtt://broker:65536", "port must be a number"),
    ("mqtt://broker:x", "port must be a number"),
    ("mqtt://alice:secret@broker", "credentials never go in the URL"),
    ("mqtt://broker/topic", "no path"),
    ("mqtt://[::1", "closing ']'"),
    ("mqtt://bro ker", "blank"),
  ])
  func badBrokerURLs(text: String, reason: String) {
    let error = #expect(throws: BridgeError.self) { try BrokerAddress(parsing: text) }
    #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
    #expect(error?.code == .usage)
  }

  @Test func theCommandLineNamesTheOption() throws {
    #expect(try BridgeConfiguration.commandLine(broker: nil, namespaces: []) == nil)
    let made = try #require(
      try BridgeConfiguration.commandLine(
        broker: "mqtt://h:2000", namespaces: ["group.example", "user.uid.1000"]))
    #expect(made.broker.port == 2000)
    #expect(made.scope.namespaces == ["group.example", "user.uid.1000"])
    for (broker, namespaces, expected) in [
      (nil, ["a"], "--bridge-namespace needs --bridge"),
      ("mqtt://h", [], "--bridge needs at least one --bridge-namespace"),
      ("h", ["a"], "--bridge: 'h' is not a broker URL"),
      ("mqtt://h", ["self.x"], "--bridge-namespace: 'self.x' is not a namespace"),
      ("mqtt://h", ["self"], "never leave the host"),
      ("mqtt://h", ["a."], "ends with '.'"),
      ("mqtt://h", [""], "it is empty"),
      ("mqtt://h", ["user.uid.x"], "must name the user"),
    ] as [(String?, [String], String)] {
      let error = #expect(throws: BridgeError.self) {
        try BridgeConfiguration.commandLine(broker: broker, namespaces: namespaces)
      }
      #expect(error?.message.contains(expected) == true, "\(error?.message ?? "")")
    }
    #expect(throws: BridgeError.self) {
      try BridgeConfiguration.commandLine(
        broker: "mqtt://h", namespaces: ["a"], passwordFile: "/p")
    }
  }

  @Test func theConfigurationFileHoldsBridgeBlocks() throws {
    let text = """
      # access rules and bridges share the file
      reserve com.example. 0 0 rwr-r-
      bridge mqtt://one:1883
      bridge-namespace group.example group.other
      bridge-user alice
      bridge-password-file secrets/mqtt
      bridge-topic-prefix site/a
      bridge-queue 5
      bridge-reconnect 1 8
      bridge-session-expiry 16
      bridge mqtts://two
      bridge-namespace user.uid.1000\r
      bridge-ca-file /etc/ca.pem
      bridge-client-id laptop

      """
    let bridges = try BridgeConfiguration.parse(
      Array(text.utf8), path: "/etc/notifybus/notify.conf")
    #expect(bridges.count == 2)
    #expect(bridges[0].scope.namespaces == ["group.example", "group.other"])
    #expect(bridges[0].user == "alice")
    #expect(bridges[0].passwordFile == "/etc/notifybus/secrets/mqtt")
    #expect(bridges[0].topics.prefix == "site/a")
    #expect(bridges[0].queueLimit == 5)
    #expect(bridges[0].reconnectDelay == 1...8)
    #expect(bridges[0].sessionExpirySeconds == 16)
    #expect(bridges[0].origin == "/etc/notifybus/notify.conf:3")
    #expect(bridges[1].broker.usesTLS)
    #expect(bridges[1].caFile == "/etc/ca.pem")
    #expect(bridges[1].effectiveClientID(host: "h", user: 1, bus: "x") == "laptop")
  }

  @Test(arguments: [
    ("bridge-namespace a\n", ":1: 'bridge-namespace' comes before any 'bridge URL' line"),
    ("bridge mqtt://h\n", ":1: bridge mqtt://h:1883: no bridge-namespace follows it"),
    ("bridge h\n", ":1: bridge: 'h' is not a broker URL"),
    ("bridge mqtt://h\nbridge-namespace self.x\n", ":2: bridge-namespace: 'self.x'"),
    ("bridge mqtt://h\nbridge-namespace a a\n", ":2: bridge-namespace 'a' is already given"),
    ("bridge mqtt://h\nbridge-colour blue\n", ":2: unknown directive 'bridge-colour'"),
    ("bridge mqtt://h\nbridge-user\n", ":2: 'bridge-user' takes 1 field, not 0"),
    ("bridge mqtt://h\nbridge-queue -1\n", ":2: bridge-queue: '-1' is not a number"),
    ("bridge mqtt://h\nbridge-reconnect 9 1\n", ":2: bridge-reconnect: the first delay"),
    ("bridge mqtt://h\nbridge-topic-prefix $x\n", ":2: bridge-topic-prefix: topic prefix '$x'"),
    ("bridge mqtt://h a\n", ":1: 'bridge' takes 1 field, not 2"),
    (
      "bridge mqtt://h\nbridge-namespace a\nbridge-password-file p\n",
      ":1: bridge mqtt://h:1883: bridge-password-file needs bridge-user"
    ),
    (
      "bridge mqtt://h\nbridge-namespace a\nbridge-ca-file c\n", "TLS files need an mqtts:// broker"
    ),
    (
      "bridge mqtt://h\nbridge-namespace a\nbridge-session-expiry 0\n",
      ":1: bridge mqtt://h:1883: bridge-session-expiry (0 s) must be at least twice the longest "
        + "bridge-reconnect delay (30 s)"
    ),
    (
      "bridge mqtt://h\nbridge-namespace a\nbridge-reconnect 1 600\n",
      "bridge-session-expiry (600 s) must be at least twice the longest bridge-reconnect delay"
    ),
  ])
  func badConfigurationLinesNameTheLine(text: String, expected: String) {
    let error = #expect(throws: BridgeError.self) {
      try BridgeConfiguration.parse(Array(text.utf8), path: "/c")
    }
    #expect(
      error?.message.contains("/c" + expected) == true || error?.message.contains(expected) == true,
      "\(error?.message ?? "")")
    #expect(error?.code == .configuration)
  }

  @Test func passwordsComeFromTheirFile() throws {
    var configuration = BridgeConfiguration(
      broker: try BrokerAddress(parsing: "mqtt://h"), namespaces: ["a"])
    configuration.user = "alice"
    configuration.passwordFile = "/p"
    try configuration.loadSecrets { _ in .success(Array("s3cret\nignored\n".utf8)) }
    #expect(configuration.password == "s3cret")
    var empty = configuration
    do {
      try empty.loadSecrets { _ in .success([]) }
      Issue.record("an empty password file was accepted")
    } catch {
      #expect(error.message.contains("does not start with a password line"))
    }
    var missing = configuration
    do {
      try missing.loadSecrets(reading: BridgeFiles.read)
      Issue.record("a missing password file was accepted")
    } catch {
      #expect(error.message.contains("bridge-password-file of --bridge: cannot open '/p'"))
    }
  }
}

struct BridgeScopeTests {
  let scope = BridgeScope(["group.example", "user", "user.uid.1000"])

  @Test(arguments: [
    ("group.example", true), ("group.example.saved", true), ("group.examples", false),
    ("group", false), ("self.group.example", false), ("user.name", true),
    ("user.uid.1000", true), ("user.uid.1000.x", true), ("user.uid.1001.x", false),
    ("user.uid.10000", false), ("user.uid", true), ("user.uid.x", true),
  ])
  func scopes(name: String, carried: Bool) throws {
    #expect(scope.contains(try NotifyName(name)) == carried)
  }
}

struct DuplicateFilterTests {
  let one = BridgeOrigin("11111111111111111111111111111111")!
  let two = BridgeOrigin("22222222222222222222222222222222")!

  @Test func repeatsAreRecognisedInTheWindow() {
    var filter = DuplicateFilter()
    let steps: [(BridgeOrigin, UInt64, DuplicateFilter.Verdict)] = [
      (one, 1, .new), (one, 1, .duplicate), (two, 1, .new), (one, 5, .new), (one, 3, .new),
      (one, 3, .duplicate), (one, 5, .duplicate), (one, 200, .new), (one, 5, .duplicate),
      (one, 4, .new), (one, 5000, .new), (one, 200, .late), (one, 4999, .new),
      (one, 4999, .duplicate),
    ]
    for (index, (origin, sequence, expected)) in steps.enumerated() {
      let verdict = filter.admit(BridgeStamp(origin: origin, sequence: sequence))
      #expect(verdict == expected, "step \(index): \(sequence)")
    }
  }

  @Test func everyNumberOfARandomOrderIsAdmittedOnce() {
    var filter = DuplicateFilter()
    var generator = SystemRandomNumberGenerator()
    let numbers = (1...3000).map(UInt64.init)
    var admitted = 0
    // Two interleaved copies, each shuffled within blocks of 100 (reordering within the window).
    for block in stride(from: 0, to: numbers.count, by: 100) {
      let slice = numbers[block..<min(block + 100, numbers.count)]
      for sequence in (Array(slice) + Array(slice)).shuffled(using: &generator) {
        if filter.admit(BridgeStamp(origin: one, sequence: sequence)) == .new { admitted += 1 }
      }
    }
    #expect(admitted == numbers.count)
  }
}

extension DuplicateFilterTests {
  /// Against the plain definition (a set of every number seen and the highest): random
  /// steps forward of every size (within a word, across words, past the window), repeats
  /// and late numbers, for two origins at once.
  @Test func verdictsMatchTheSetOfEverythingSeen() {
    var filter = DuplicateFilter()
    var generator = SystemRandomNumberGenerator()
    var seen: [BridgeOrigin: (highest: UInt64, numbers: Set<UInt64>)] = [:]
    for step in 0..<20_000 {
      let origin = Bool.random(using: &generator) ? one : two
      let highest = seen[origin]?.highest ?? 0
      let sequence: UInt64
      switch UInt64.random(in: 0..<10, using: &generator) {
      case 0: sequence = highest + UInt64.random(in: 1...3000, using: &generator)
      case 1...4: sequence = highest + UInt64.random(in: 1...130, using: &generator)
      default:
        let back = UInt64.random(in: 0...1100, using: &generator)
        sequence = highest > back ? highest - back : 1
      }
      let expected: DuplicateFilter.Verdict
      if let known = seen[origin] {
        if sequence > known.highest {
          expected = .new
        } else if known.highest - sequence >= DuplicateFilter.window {
          expected = .late
        } else {
          expected = known.numbers.contains(sequence) ? .duplicate : .new
        }
      } else {
        expected = .new
      }
      let verdict = filter.admit(BridgeStamp(origin: origin, sequence: sequence))
      #expect(verdict == expected, "step \(step): \(sequence) after \(highest)")
      if verdict != expected { return }
      seen[origin, default: (0, [])].numbers.insert(sequence)
      seen[origin]!.highest = max(seen[origin]!.highest, sequence)
    }
  }
}

struct OutageQueueTests {
  @Test func theQueueCoalescesByNameAndIsBounded() {
    var queue = OutageQueue(limit: 2)
    let kept = [
      BridgeMessage(name: "a", content: .post), BridgeMessage(name: "a", content: .post),
      BridgeMessage(name: "a", content: .state(1, setTime: 1)),
      BridgeMessage(name: "b", content: .post),
      BridgeMessage(name: "a", content: .state(2, setTime: 2)),
    ].map { queue.add($0) }
    #expect(kept == [true, true, true, false, true])
    let drained = queue.drain()
    #expect(drained.map(\.content) == [.post, .state(2, setTime: 2)])
    #expect(queue.count == 0)
  }
}
