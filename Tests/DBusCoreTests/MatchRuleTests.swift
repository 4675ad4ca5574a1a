import DBusCore
import Testing

struct MatchRuleTests {
  @Test func rendersInAFixedOrderWithQuoting() {
    var rule = MatchRule.signal(interface: "org.notifybus.Notify1", member: "Posted")
    rule.arguments[0] = "it's"
    rule.arguments[2] = "x"
    #expect(
      rule.description
        == #"type='signal',interface='org.notifybus.Notify1',member='Posted',arg0='it'\''s',arg2='x'"#
    )
  }

  @Test(arguments: [
    "type='signal',interface='org.example.I',arg0='x'",
    "type='method_call',path_namespace='/org/example',arg3path='/a/'",
    "type='signal',arg0namespace='com.example'",
    "sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='it'\\''s'",
  ])
  func parsesWhatItRenders(_ text: String) throws {
    let rule = try MatchRule(parsing: text)
    #expect(try MatchRule(parsing: rule.description) == rule)
  }

  @Test func parsesUnquotedValuesAndEscapedQuotes() throws {
    let rule = try MatchRule(parsing: "type=signal,arg0=a\\'b")
    #expect(rule.type == .signal)
    #expect(rule.arguments[0] == "a'b")
  }

  @Test(arguments: [
    ("type='signal", "offset 12: the quote opened for 'type' is not closed"),
    ("type='signal',type='error'", "offset 14: key 'type' is repeated"),
    ("colour='red'", "offset 0: unknown key 'colour'"),
    ("type='rocket'", "unknown type 'rocket'"),
    ("interface='org'", "'interface': invalid interface name 'org'"),
    ("path='/a',path_namespace='/b'", "'path' and 'path_namespace' cannot both be given"),
    ("arg64='x'", "argument index 64 is outside 0...63"),
    ("arg01='x'", "unknown key 'arg01'"),
    ("arg0namespace='com.9x'", "element 2 starts with a digit"),
    ("arg0='x',arg0namespace='com'", "cannot be combined"),
    ("type", "expected '=' after 'type'"),
    ("=x", "expected a key before '='"),
    ("type='signal',", "expected a key after ','"),
    ("eavesdrop='true'", "'eavesdrop' is not supported"),
  ])
  func malformedRulesAreRejectedWithTheReason(_ text: String, _ reason: String) {
    let error = #expect(throws: DBusError.self) { try MatchRule(parsing: text) }
    #expect(error?.name == .matchRuleInvalid)
    #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
  }

  /// Found by the fuzzer: a quote followed by a combining mark is one Swift `Character`, so quoting
  /// by characters missed it.
  ///
  /// Rules are bytes on the wire.
  @Test func quoteBeforeACombiningMarkRoundTrips() throws {
    var rule = MatchRule.signal()
    rule.arguments[0] = "it's'\u{64C}x"
    let parsed = try MatchRule(parsing: rule.description)
    #expect(parsed == rule)
    #expect(Array(parsed.arguments[0]?.utf8 ?? "".utf8) == Array("it's'\u{64C}x".utf8))
  }

  @Test func argumentsMatchByBytesNotCanonicalEquivalence() {
    let composed = "\u{E9}"  // é
    let decomposed = "e\u{301}"  // e + combining acute, equal as Swift strings
    let rule = MatchRule.signal(arg0: composed)
    #expect(rule.matches(Message(kind: .signal, body: [.string(composed)])))
    #expect(!rule.matches(Message(kind: .signal, body: [.string(decomposed)])))
  }

  @Test func tooLongRulesAreRejected() {
    var rule = MatchRule()
    rule.arguments[0] = String(repeating: "x", count: 1100)
    let error = #expect(throws: DBusError.self) { try rule.validate() }
    #expect(error?.message.contains("the limit is 1024") == true)
  }

  @Test func matchesLikeTheBusDaemon() throws {
    let message = Message(
      kind: .signal, path: "/org/a/b", interface: "org.example.I", member: "M",
      body: [.string("com.example.sub"), .objectPath("/x/y")])
    func matches(_ text: String) throws -> Bool { try MatchRule(parsing: text).matches(message) }
    #expect(try matches("type='signal',interface='org.example.I'"))
    #expect(try !matches("type='method_call'"))
    #expect(try matches("arg0namespace='com.example'"))
    #expect(try matches("arg0namespace='com.example.sub'"))
    #expect(try !matches("arg0namespace='com.ex'"))
    #expect(try matches("path_namespace='/org/a'"))
    #expect(try !matches("path_namespace='/org/ab'"))
    #expect(try matches("arg1path='/x/'"))
    #expect(try !matches("arg1='/x/y'"), "argN matches strings only, not object paths")
    #expect(try !matches("arg5='x'"))
  }
}
