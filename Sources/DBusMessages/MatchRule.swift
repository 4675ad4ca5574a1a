public import DBusCodec

/// A D-Bus match rule: which messages a connection asks the bus to route to it.
///
/// ```swift
/// var rule = MatchRule(type: .signal)
/// rule.interface = "org.notifybus.Notify1"
/// rule.arguments[0] = "group.example.saved"
/// rule.description  // "type='signal',interface='org.notifybus.Notify1',arg0='group.example.saved'"
/// ```
///
/// A rule is checked when it is built or parsed: names follow their grammar, `path` and
/// `pathNamespace` exclude each other, argument indexes are 0 through 63, an
/// `arg0namespace` is a bus-name-like namespace, and the rendered rule fits in 1,024
/// bytes. The connection also uses rules to route received messages to subscribers, with
/// the bus daemon's semantics.
public struct MatchRule: Hashable, Sendable, CustomStringConvertible {
  /// The message type to match; `nil` matches every type.
  public var type: Message.Kind?
  /// The sender, a unique or well-known name.
  public var sender: BusName?
  /// The interface.
  public var interface: InterfaceName?
  /// The member.
  public var member: MemberName?
  /// The exact object path.
  ///
  /// Excludes ``pathNamespace``.
  public var path: ObjectPath?
  /// A path and everything below it.
  ///
  /// Excludes ``path``.
  public var pathNamespace: ObjectPath?
  /// The destination, for unicast messages.
  public var destination: BusName?
  /// `argN='value'`: string argument N must equal the value.
  public var arguments: [Int: String] = [:]
  /// `argNpath='value'`: string or path argument N must equal the value, or one of them
  /// must be a `/`-terminated prefix of the other.
  public var argumentPaths: [Int: String] = [:]
  /// `arg0namespace='value'`: string argument 0 must equal the value or start with it
  /// followed by `.`.
  public var arg0Namespace: String?

  /// The longest rule the bus accepts, in bytes.
  public static let maximumLength = 1024
  /// The highest argument index a rule may test.
  public static let maximumArgumentIndex = 63

  /// Creates a rule, by default for signals only.
  public init(type: Message.Kind? = .signal) { self.type = type }

  /// A rule for one signal: `type='signal'` plus the given fields.
  public static func signal(
    interface: InterfaceName? = nil,
    member: MemberName? = nil,
    path: ObjectPath? = nil,
    sender: BusName? = nil,
    arg0: String? = nil
  ) -> MatchRule {
    var rule = MatchRule(type: .signal)
    rule.interface = interface
    rule.member = member
    rule.path = path
    rule.sender = sender
    if let arg0 { rule.arguments[0] = arg0 }
    return rule
  }

  /// The rule in the bus's text form, keys in a fixed order.
  public var description: String {
    var parts: [String] = []
    func add(_ key: String, _ value: String?) {
      guard let value else { return }
      parts.append("\(key)=\(Self.quote(value))")
    }
    add("type", type.map(Self.typeName))
    add("sender", sender?.rawValue)
    add("interface", interface?.rawValue)
    add("member", member?.rawValue)
    add("path", path?.rawValue)
    add("path_namespace", pathNamespace?.rawValue)
    add("destination", destination?.rawValue)
    for (index, value) in arguments.sorted(by: { $0.key < $1.key }) { add("arg\(index)", value) }
    for (index, value) in argumentPaths.sorted(by: { $0.key < $1.key }) {
      add("arg\(index)path", value)
    }
    add("arg0namespace", arg0Namespace)
    return parts.joined(separator: ",")
  }

  /// Checks the rules that span fields.
  ///
  /// - Throws: ``DBusError`` with name ``DBusError/Name/matchRuleInvalid`` naming the
  ///   rule broken.
  public func validate() throws(DBusError) {
    func fail(_ rule: String) -> DBusError {
      DBusError(.matchRuleInvalid, "invalid match rule \"\(self)\": \(rule)")
    }
    if path != nil && pathNamespace != nil {
      throw fail("'path' and 'path_namespace' cannot both be given")
    }
    for index in Array(arguments.keys) + Array(argumentPaths.keys)
    where !(0...Self.maximumArgumentIndex).contains(index) {
      throw fail("argument index \(index) is outside 0...\(Self.maximumArgumentIndex)")
    }
    for index in arguments.keys where argumentPaths[index] != nil {
      throw fail("'arg\(index)' and 'arg\(index)path' cannot both be given")
    }
    if let namespace = arg0Namespace {
      if arguments[0] != nil || argumentPaths[0] != nil {
        throw fail("'arg0namespace' cannot be combined with 'arg0' or 'arg0path'")
      }
      if let violation = NameGrammar.dottedNameViolation(
        namespace.utf8, minimumElements: 1, allowHyphen: true, allowLeadingDigit: false)
      {
        throw fail("'arg0namespace' value '\(namespace)' \(violation)")
      }
    }
    for value in Array(arguments.values) + Array(argumentPaths.values) + [arg0Namespace ?? ""]
    where value.utf8.contains(0) {
      throw fail("a value contains a NUL character")
    }
    let length = description.utf8.count
    if length > Self.maximumLength {
      throw fail("it is \(length) bytes long; the limit is \(Self.maximumLength)")
    }
  }

  /// Whether `message` matches, with the bus daemon's semantics.
  ///
  /// `sender` is compared literally, so a rule naming a well-known sender matches only
  /// messages whose sender field carries that name.
  public func matches(_ message: Message) -> Bool {
    if let type, type != message.kind { return false }
    if let interface, interface != message.interface { return false }
    if let member, member != message.member { return false }
    if let path, path != message.path { return false }
    if let pathNamespace {
      guard let messagePath = message.path?.rawValue else { return false }
      let prefix = pathNamespace.rawValue
      let inside =
        prefix == "/" || messagePath == prefix || Self.hasBytePrefix(messagePath, prefix + "/")
      if !inside { return false }
    }
    if let sender, sender != message.sender { return false }
    if let destination, destination != message.destination { return false }
    for (index, expected) in arguments {
      guard index < message.body.count, case .string(let actual) = message.body[index],
        Self.bytesEqual(actual, expected)
      else { return false }
    }
    for (index, expected) in argumentPaths {
      guard index < message.body.count, let actual = message.body[index].stringValue,
        Self.pathsMatch(actual, expected)
      else { return false }
    }
    if let namespace = arg0Namespace {
      guard let first = message.body.first, case .string(let actual) = first,
        Self.bytesEqual(actual, namespace) || Self.hasBytePrefix(actual, namespace + ".")
      else { return false }
    }
    return true
  }

  private static func pathsMatch(_ a: String, _ b: String) -> Bool {
    if bytesEqual(a, b) { return true }
    if a.utf8.last == UInt8(ascii: "/") && hasBytePrefix(b, a) { return true }
    if b.utf8.last == UInt8(ascii: "/") && hasBytePrefix(a, b) { return true }
    return false
  }

  // The bus compares bytes; Swift's `==` and `hasPrefix` compare characters, under which
  // canonically equivalent strings are equal and a quote followed by a combining mark is
  // not a quote.
  private static func bytesEqual(_ a: String, _ b: String) -> Bool { a.utf8.elementsEqual(b.utf8) }

  private static func hasBytePrefix(_ text: String, _ prefix: String) -> Bool {
    text.utf8.starts(with: prefix.utf8)
  }

  static func typeName(_ kind: Message.Kind) -> String {
    switch kind {
    case .methodCall: "method_call"
    case .methodReturn: "method_return"
    case .error: "error"
    case .signal: "signal"
    }
  }

  /// Quotes a value: each run without apostrophes goes in single quotes, and each
  /// apostrophe is written as `\'` outside quotes, as the specification describes.
  static func quote(_ value: String) -> String {
    let pieces = value.utf8.split(separator: UInt8(ascii: "'"), omittingEmptySubsequences: false)
    return pieces.enumerated().map { index, piece in
      let text = String(decoding: piece, as: UTF8.self)
      return (index > 0 ? "\\'" : "") + (piece.isEmpty ? "" : "'\(text)'")
    }.joined()
  }
}
