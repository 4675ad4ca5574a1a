import NotifyServerFiles
import Testing

struct AccessPolicyTests {
  static let configuration = """
    # Reserved names.
    reserve com.example. 0 0 rwr-r-
    \treserve   com.example.shared.  1000 50 rwrwr-

    reserve com.example.shared.open 1000 50 rwrwrw
    """

  func policy() throws -> AccessPolicy {
    AccessPolicy(rules: try AccessConfiguration.parse(Array(Self.configuration.utf8), path: "/c"))
  }

  @Test func parsesRulesWithTheirLines() throws {
    let rules = try AccessConfiguration.parse(Array(Self.configuration.utf8), path: "/c")
    #expect(
      rules.map(\.prefix) == ["com.example.", "com.example.shared.", "com.example.shared.open"])
    #expect(rules.map(\.line) == [2, 3, 5])
    #expect(rules[1].owner == 1000 && rules[1].group == 50)
    #expect(rules[1].mode.description == "rwrwr-")
    #expect(rules[0].origin == "line 2 of /c: reserve com.example. 0 0 rwr-r-")
    #expect(AccessMode(parsing: "rwr-r-".utf8)?.rawValue == 0x113)
  }

  @Test func userNamesBelongToTheirUserAndRoot() throws {
    let policy = try policy()
    #expect(policy.check(.post, "user.uid.1000", user: 1000, groups: []) == nil)
    #expect(policy.check(.post, "user.uid.1000.x", user: 1000, groups: []) == nil)
    #expect(policy.check(.post, "user.uid.1000.x", user: 0, groups: []) == nil)
    #expect(
      policy.check(.post, "user.uid.0.x", user: 65534, groups: [])
        == "uid 65534 may not post 'user.uid.0.x': user.uid.0 names belong to uid 0 and root")
    #expect(policy.check(.post, "user.uid.5", user: 5, groups: []) == nil)
    #expect(policy.check(.setState, "user.uid.5.a.b", user: 5, groups: []) == nil)
    // As on Darwin, uid 5 may use only user.uid.5 and the names below it: every other
    // name under user.uid. belongs to its uid, or to root alone when it names none.
    for name in [
      "user.uid.50", "user.uid.5x", "user.uid.05", "user.uid.05.x", "user.uid.abc", "user.uid.",
      "user.uid..5", "user.uid.+5", "user.uid.99999999999",
    ] {
      #expect(policy.check(.setState, name, user: 5, groups: []) != nil, "\(name)")
      #expect(policy.check(.post, name, user: 5, groups: []) != nil, "\(name)")
      #expect(policy.check(.post, name, user: 0, groups: []) == nil, "\(name)")
    }
    #expect(
      policy.check(.post, "user.uid.05", user: 5, groups: [])
        == "uid 5 may not post 'user.uid.05': under user.uid., uid 5 may use only "
        + "user.uid.5 and the names below it")
    // user.uid.00.x names no uid (Darwin spells uid 0 as 0), so it is root's alone.
    #expect(AccessPolicy.reservedUser(of: "user.uid.00.x") == .root)
    #expect(AccessPolicy.reservedUser(of: "user.uid.0.x") == .user(0))
    #expect(AccessPolicy.reservedUser(of: "user.uid.4294967295") == .user(4_294_967_295))
    #expect(AccessPolicy.reservedUser(of: "user.uid.4294967296") == .root)
    #expect(AccessPolicy.reservedUser(of: "user.uidx") == nil)
    #expect(
      policy.check(.post, "user.uid.00.x", user: 65534, groups: [])
        == "uid 65534 may not post 'user.uid.00.x': under user.uid., uid 65534 may use only "
        + "user.uid.65534 and the names below it")
  }

  @Test func theDeepestPrefixDecides() throws {
    let policy = try policy()
    #expect(
      policy.check(.post, "com.example.x", user: 1000, groups: [])
        == "uid 1000 may not post 'com.example.x': reserved by line 2 of /c: "
        + "reserve com.example. 0 0 rwr-r-")
    #expect(policy.check(.read, "com.example.x", user: 1000, groups: []) == nil)
    // The owner and the group may write under com.example.shared.; others may not.
    #expect(policy.check(.post, "com.example.shared.a", user: 1000, groups: []) == nil)
    #expect(policy.check(.post, "com.example.shared.a", user: 7, groups: [50]) == nil)
    #expect(
      policy.check(.setState, "com.example.shared.a", user: 7, groups: [51])?.hasSuffix(
        "reserved by line 3 of /c: reserve com.example.shared. 1000 50 rwrwr-") == true)
    // The deeper open rule wins over both.
    #expect(policy.check(.post, "com.example.shared.open.x", user: 7, groups: []) == nil)
    #expect(policy.check(.post, "org.other", user: 7, groups: []) == nil)
    #expect(policy.check(.post, "com.example.x", user: 0, groups: []) == nil)
  }

  @Test(arguments: [
    ("allow x 0 0 rwrwrw\n", NotifydFileError.Code.badLine, 1),
    ("reserve x 0 0\n", .badLine, 1),
    ("reserve x 0 0 rwrwrw extra\n", .badLine, 1),
    ("\nreserve x -1 0 rwrwrw\n", .badNumber, 2),
    ("reserve x 4294967296 0 rwrwrw\n", .badNumber, 1),
    ("reserve x 0 g rwrwrw\n", .badNumber, 1),
    ("reserve x 0 0 rwrw\n", .badMode, 1),
    ("reserve x 0 0 wrwrwr\n", .badMode, 1),
    ("reserve x 0 0 rwrwrx\n", .badMode, 1),
    ("reserve x 0 0 rwrwrw\n# again\nreserve x 1 1 ------\n", .duplicate, 3),
    ("reserve " + String(repeating: "p", count: 600) + " 0 0 rwrwrw\n", .badName, 1),
  ])
  func malformedConfigurationsNameTheLine(text: String, code: NotifydFileError.Code, line: Int) {
    let error = #expect(throws: NotifydFileError.self) {
      _ = try AccessConfiguration.parse(Array(text.utf8), path: "/etc/notify.conf")
    }
    #expect(error?.code == code, "\(error?.message ?? "")")
    #expect(error?.line == line)
    #expect(error?.message.hasPrefix("/etc/notify.conf:\(line): ") == true)
  }

  @Test func emptyAndCommentOnlyFilesHaveNoRules() throws {
    #expect(try AccessConfiguration.parse([], path: "/c").isEmpty)
    #expect(
      try AccessConfiguration.parse(Array("# nothing\n\n  # here\r\n".utf8), path: "/c").isEmpty)
    #expect(AccessPolicy().check(.post, "anything", user: 5, groups: []) == nil)
  }
}
