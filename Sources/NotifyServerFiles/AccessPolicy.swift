/// Who may post and set the state of which names: Darwin's model, with a reason for
/// every refusal.
///
/// 1. uid 0 may do everything.
/// 2. `user.uid.N` and `user.uid.N.…` names belong to uid N (and root).
/// 3. Otherwise the rule with the longest prefix that starts the name decides: allowed
///    when the caller is the owner and the owner has the right, or is in the group and
///    the group has it, or others have it.
/// 4. A name no rule governs is open to everyone.
///
/// Writing (posting, setting state) needs the write right. The read right is kept for
/// Darwin parity and reported by ``check(_:_:user:groups:)`` with ``Operation/read``, but a
/// broadcast signal cannot be withheld from a listener, so `notifyd` does not enforce it.
public struct AccessPolicy: Hashable, Sendable {
  /// What a caller wants to do.
  public enum Operation: String, Sendable {
    case post = "post"
    case setState = "set the state of"
    case read = "read"
  }

  /// The rules, longest prefix first.
  public let rules: [AccessRule]

  /// Creates a policy from rules in any order.
  public init(rules: [AccessRule] = []) {
    self.rules = rules.sorted {
      $0.prefix.utf8.count != $1.prefix.utf8.count
        ? $0.prefix.utf8.count > $1.prefix.utf8.count
        : $0.prefix.utf8.lexicographicallyPrecedes($1.prefix.utf8)
    }
  }

  /// For `user.uid.N` and `user.uid.N.…` names, the digits N (which may not fit a uid).
  public static func reservedUserDigits(of name: String) -> Substring? {
    let prefix = "user.uid."
    guard name.utf8.starts(with: prefix.utf8) else { return nil }
    let rest = name.utf8.dropFirst(prefix.utf8.count)
    let digits = rest.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    guard !digits.isEmpty,
      rest.count == digits.count || rest.dropFirst(digits.count).first == UInt8(ascii: ".")
    else { return nil }
    return Substring(digits)
  }

  /// The rule that governs `name`, if any: the one with the longest matching prefix.
  public func rule(for name: String) -> AccessRule? {
    rules.first { $0.governs(name) }
  }

  /// Why `user` (in `groups`) may not perform `operation` on `name`, or `nil` when allowed.
  public func check(
    _ operation: Operation, _ name: String, user: UInt32, groups: [UInt32]
  ) -> String? {
    if user == 0 { return nil }
    if let digits = Self.reservedUserDigits(of: name) {
      if UInt32(digits) == user { return nil }
      return "uid \(user) may not \(operation.rawValue) '\(name)': "
        + "user.uid.\(digits) names belong to uid \(digits) and root"
    }
    guard let rule = rule(for: name) else { return nil }
    let allowed: Bool
    switch operation {
    case .read:
      allowed =
        (rule.owner == user && rule.mode.canRead(.owner))
        || (groups.contains(rule.group) && rule.mode.canRead(.group)) || rule.mode.canRead(.other)
    case .post, .setState:
      allowed =
        (rule.owner == user && rule.mode.canWrite(.owner))
        || (groups.contains(rule.group) && rule.mode.canWrite(.group))
        || rule.mode.canWrite(.other)
    }
    if allowed { return nil }
    return "uid \(user) may not \(operation.rawValue) '\(name)': reserved by \(rule.origin)"
  }
}
