import NotifyServerFiles

/// Feeds arbitrary bytes to notifyd's access configuration parser and the policy.
///
/// Parsing must never crash; the rules of a file that parses must print back to lines that
/// parse to the same rules, and the policy must answer for any name.
public func fuzz(_ bytes: [UInt8]) {
  do {
    let rules = try AccessConfiguration.parse(bytes, path: "fuzz")
    let text = rules.map { $0.text + "\n" }.joined()
    let again = try AccessConfiguration.parse(Array(text.utf8), path: "again")
    precondition(
      again.map(\.text) == rules.map(\.text), "rules do not print back to the same rules")
    let policy = AccessPolicy(rules: rules)
    for rule in rules.prefix(8) {
      _ = policy.check(.post, rule.prefix + ".x", user: 1000, groups: [rule.group])
      _ = policy.check(.read, rule.prefix, user: rule.owner, groups: [])
    }
    _ = policy.check(
      .setState, String(decoding: bytes.prefix(64), as: UTF8.self), user: 5, groups: [])
  } catch {
    precondition(error.line >= 0, "negative line")
  }
}
