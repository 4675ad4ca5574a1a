/// Who may post and set the state of which names: Darwin's model, with a reason for
/// every refusal.
///
/// 1. uid 0 may do everything.
/// 2. `user.uid.N` and `user.uid.N.…` names belong to uid N (and root), N spelled as
///    Darwin prints a uid; any other name under `user.uid.` belongs to root alone.
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

  /// Who a name under `user.uid.` belongs to, besides root.
  public enum ReservedUser: Hashable, Sendable {
    /// The uid the name spells.
    case user(UInt32)
    /// Root alone: the name spells no uid.
    case root
  }

  /// For a name under `user.uid.`, who it belongs to; `nil` for every other name.
  ///
  /// As on Darwin, `user.uid.N` and `user.uid.N.…` belong to uid N, where N is the uid
  /// as Darwin prints it: decimal, no sign, no leading zero (`0` itself excepted), and
  /// here within 32 bits. Every other name under `user.uid.` (`user.uid.05`,
  /// `user.uid.5x`, `user.uid.abc`, `user.uid.`) spells no uid and belongs to root alone.
  public static func reservedUser(of name: String) -> ReservedUser? {
    let prefix = "user.uid.".utf8
    guard name.utf8.starts(with: prefix) else { return nil }
    let element = name.utf8.dropFirst(prefix.count).prefix { $0 != UInt8(ascii: ".") }
    guard !element.isEmpty,
      element.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
      element.first != UInt8(ascii: "0") || element.count == 1,
      let user = UInt32(String(decoding: element, as: UTF8.self))
    else { return .root }
    return .user(user)
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
    switch Self.reservedUser(of: name) {
    case .user(user)?:
      return nil
    case .user(let owner)?:
      return "uid \(user) may not \(operation.rawValue) '\(name)': "
        + "user.uid.\(owner) names belong to uid \(owner) and root"
    case .root?:
      return "uid \(user) may not \(operation.rawValue) '\(name)': under user.uid., "
        + "uid \(user) may use only user.uid.\(user) and the names below it"
    case nil:
      break
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
