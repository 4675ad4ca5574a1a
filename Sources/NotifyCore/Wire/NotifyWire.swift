public import DBusCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The names and layout of NotifyBus's notification signals on D-Bus.
///
/// Specified in `Protocol/notify.md`; the constants here and that document change
/// together.
public enum NotifyWire {
  /// The object path every `Posted` signal is sent from.
  public static let path: ObjectPath = "/org/notifybus/Notify1"
  /// The signal member.
  public static let member: MemberName = "Posted"
  /// The well-known name and interface of `notifyd`.
  public static let service: BusName = "org.notifybus.Notify1"
  /// The interface of `notifyd`'s methods.
  public static let serviceInterface: InterfaceName = "org.notifybus.Notify1"
  /// The prefix of every per-name signal interface.
  public static let interfacePrefix = "org.notifybus.Notify1.N."
  /// The prefix of a hashed per-name interface, used when the escaped one would pass
  /// 255 bytes.
  public static let hashedInterfacePrefix = "org.notifybus.Notify1.H."

  /// The interface a `Posted` signal for `name` carries, so the bus daemon routes it by
  /// its interface index instead of walking every match rule.
  ///
  /// Each `.`-separated element of the name becomes one interface element: ASCII letters
  /// and digits stay; every other byte (including `_`) becomes `_` and two lower-case hex
  /// digits; a leading digit is escaped the same way; an empty element becomes `_`.
  /// `group.example.saved` gives `org.notifybus.Notify1.N.group.example.saved`. When the
  /// result would pass 255 bytes, the interface is `org.notifybus.Notify1.H.` followed by
  /// `h` and 32 hex digits of ``hash128(_:)`` of the name. Receivers always compare the
  /// first argument with the name, so distinct names that share an interface are told
  /// apart.
  public static func interface(for name: NotifyName) -> InterfaceName {
    // Built as bytes and made a string once: this runs for every post.
    var bytes: [UInt8] = []
    bytes.reserveCapacity(interfacePrefix.utf8.count + name.rawValue.utf8.count + 8)
    bytes.append(contentsOf: interfacePrefix.utf8)
    forEachEscapedByte(of: name) { bytes.append($0) }
    if bytes.count > 255 {
      return InterfaceName(unchecked: hashedInterfacePrefix + "h" + hash128(name.rawValue))
    }
    return InterfaceName(unchecked: String(decoding: bytes, as: UTF8.self))
  }

  /// Whether `interface` is ``interface(for:)`` of `name`, without building it: what a
  /// receiver checks for every signal.
  ///
  /// One pass over the two strings' UTF-8 bytes in place, comparing each byte of the
  /// escaped name as it is produced: no allocation, no copy, no call per byte.
  public static func isInterface(_ interface: InterfaceName, of name: NotifyName) -> Bool {
    // `nil`: the hashed form (rare: compared built), or storage that is not contiguous.
    var outcome: Bool?
    _ = interface.rawValue.utf8.withContiguousStorageIfAvailable { text in
      name.rawValue.utf8.withContiguousStorageIfAvailable { name in
        interfacePrefix.utf8.withContiguousStorageIfAvailable { prefix in
          outcome = isEscapedInterface(text, prefix: prefix, of: name)
        }
      }
    }
    return outcome ?? (interface == self.interface(for: name))
  }

  /// ``isInterface(_:of:)`` over bytes: `nil` for the hashed form of long names, which is
  /// rare and compared built.
  private static func isEscapedInterface(
    _ text: UnsafeBufferPointer<UInt8>, prefix: UnsafeBufferPointer<UInt8>,
    of name: UnsafeBufferPointer<UInt8>
  ) -> Bool? {
    guard text.count >= prefix.count,
      sameBytes(UnsafeBufferPointer(rebasing: text[..<prefix.count]), prefix)
    else { return nil }
    guard text.count <= 255 else { return false }
    let hexDigits: StaticString = "0123456789abcdef"
    let hex = hexDigits.utf8Start
    var position = prefix.count
    let end = text.count
    // Whether the next byte of the interface is `byte`, consuming it.
    func take(_ byte: UInt8) -> Bool {
      guard position < end, text[position] == byte else { return false }
      position += 1
      return true
    }
    var index = 0
    for byte in name {
      if byte == UInt8(ascii: ".") {
        if index == 0 && !take(UInt8(ascii: "_")) { return false }
        guard take(byte) else { return false }
        index = 0
        continue
      }
      let isLetter = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
      let isDigit = byte >= 0x30 && byte <= 0x39
      if isLetter || (isDigit && index > 0) {
        guard take(byte) else { return false }
      } else {
        guard take(UInt8(ascii: "_")), take(hex[Int(byte >> 4)]), take(hex[Int(byte & 0xF)])
        else { return false }
      }
      index += 1
    }
    if index == 0 && !take(UInt8(ascii: "_")) { return false }
    return position == end
  }

  /// The bytes after ``interfacePrefix`` of the escaped interface of `name`.
  private static func forEachEscapedByte(of name: NotifyName, _ body: (UInt8) -> Void) {
    let hexDigits: StaticString = "0123456789abcdef"
    var index = 0
    for byte in name.rawValue.utf8 {
      if byte == UInt8(ascii: ".") {
        if index == 0 { body(UInt8(ascii: "_")) }
        body(byte)
        index = 0
        continue
      }
      let isLetter = (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
      let isDigit = byte >= 0x30 && byte <= 0x39
      if isLetter || (isDigit && index > 0) {
        body(byte)
      } else {
        body(UInt8(ascii: "_"))
        body(hexDigits.utf8Start[Int(byte >> 4)])
        body(hexDigits.utf8Start[Int(byte & 0xF)])
      }
      index += 1
    }
    // An empty last element (the name is empty or ends with a dot).
    if index == 0 { body(UInt8(ascii: "_")) }
  }

  /// A 128-bit FNV-1a hash of the name's bytes as 32 lower-case hex digits: two 64-bit
  /// FNV-1a passes, the second with the offset basis XOR `0x5555555555555555`.
  public static func hash128(_ text: String) -> String {
    var first: UInt64 = 0xcbf2_9ce4_8422_2325
    var second: UInt64 = 0xcbf2_9ce4_8422_2325 ^ 0x5555_5555_5555_5555
    for byte in text.utf8 {
      first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
      second = (second ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
    }
    return hex64(first) + hex64(second)
  }

  /// The match rule for one name: its interface, member and path.
  public static func rule(for name: NotifyName) -> MatchRule {
    MatchRule.signal(interface: interface(for: name), member: member, path: path)
  }

  /// The match rule for every name in a namespace, by `arg0namespace`.
  public static func rule(forNamespace prefix: String) throws(NotifyError) -> MatchRule {
    var rule = MatchRule.signal(member: member, path: path)
    rule.arg0Namespace = prefix
    do {
      try rule.validate()
    } catch {
      throw NotifyError(
        .invalidName, "invalid namespace '\(prefix)': \(error.message)", cause: .bus(error))
    }
    return rule
  }

  /// The `Posted` signal for `name`: body `(s name, t sequence, t nameSequence)`.
  ///
  /// - Parameters:
  ///   - sequence: The poster's count of all its posts, this one included.
  ///   - nameSequence: The poster's count of its posts of `name`, this one included: a
  ///     receiver that sees it jump knows the bus dropped posts on the way.
  ///   - interface: ``interface(for:)`` of the name, when the caller keeps it
  ///     (``PostCounts/nextPost(of:)``); built here when `nil`.
  public static func signal(
    for name: NotifyName, sequence: UInt64, nameSequence: UInt64, interface: InterfaceName? = nil
  ) -> Message {
    .signal(
      path: path, interface: interface ?? self.interface(for: name), member: member,
      body: [.string(name.rawValue), .uint64(sequence), .uint64(nameSequence)])
  }

  /// The poster's count of its posts of the name, the third argument of a well-formed
  /// `Posted` signal, when it is there and a `t`.
  public static func nameSequence(in message: Message) -> UInt64? {
    message.body.count > 2 ? message.body[2].uint64Value : nil
  }

  /// The name a received `Posted` signal announces, if it is well formed: path and
  /// member as above, a first argument that is a valid name, an interface that matches
  /// it, and a second argument, when present, that is a `t`.
  public static func postedName(in message: Message) -> NotifyName? {
    guard message.kind == .signal, message.member == member, message.path == path,
      case .string(let text)? = message.body.first, let name = try? NotifyName(text),
      let interface = message.interface, isInterface(interface, of: name)
    else { return nil }
    if message.body.count > 1, case .uint64 = message.body[1] {
    } else if message.body.count > 1 {
      return nil
    }
    return name
  }

  /// Whether `message` is a well-formed `Posted` signal for `name`, whose interface is
  /// `interface` (``interface(for:)`` of the name, passed in when already known).
  public static func isPosted(
    _ message: Message, name: NotifyName, interface: InterfaceName? = nil
  ) -> Bool {
    guard message.kind == .signal, message.member == member, message.path == path,
      case .string(let text)? = message.body.first, hasSameBytes(text, name.rawValue),
      let received = message.interface,
      interface.map({ $0 == received }) ?? isInterface(received, of: name)
    else { return false }
    if message.body.count > 1, case .uint64 = message.body[1] {
    } else if message.body.count > 1 {
      return false
    }
    return true
  }

  /// Whether two strings have the same UTF-8 bytes (not `==`, which compares canonical
  /// equivalence): a length check and one comparison over memory.
  package static func hasSameBytes(_ a: String, _ b: String) -> Bool {
    guard a.utf8.count == b.utf8.count else { return false }
    var same: Bool?
    _ = a.utf8.withContiguousStorageIfAvailable { a in
      b.utf8.withContiguousStorageIfAvailable { b in same = sameBytes(a, b) }
    }
    return same ?? a.utf8.elementsEqual(b.utf8)
  }

  /// Whether two buffers hold the same bytes: one `memcmp` (the generic `elementsEqual`
  /// compares a byte at a time).
  static func sameBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
    a.count == b.count && (a.isEmpty || memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0)
  }

  /// A call of `notifyd`'s `member` with `body`.
  public static func serviceCall(_ member: MemberName, _ body: [DBusValue]) -> Message {
    .methodCall(
      destination: service, path: path, interface: serviceInterface, member: member, body: body)
  }

  // The members, checked once: a name made from a literal is checked each time (about
  // 3,400 instructions for `GetState`, a twentieth of a call's).
  private static let getStateMember: MemberName = "GetState"
  private static let setStateMember: MemberName = "SetState"
  private static let postMember: MemberName = "Post"
  private static let restoreStateMember: MemberName = "RestoreState"

  /// `notifyd`'s `GetState(s name) → t`.
  public static func getState(_ name: NotifyName) -> Message {
    serviceCall(getStateMember, [.string(name.rawValue)])
  }

  /// `notifyd`'s `SetState(s name, t state)`.
  public static func setState(_ name: NotifyName, _ value: UInt64) -> Message {
    serviceCall(setStateMember, [.string(name.rawValue), .uint64(value)])
  }

  /// `notifyd`'s `Post(s name)`: a mediated post, which `notifyd` checks and emits.
  public static func mediatedPost(_ name: NotifyName) -> Message {
    serviceCall(postMember, [.string(name.rawValue)])
  }

  /// `notifyd`'s `RestoreState(s name, t state, t setTimeNanoseconds) → b`: sets the state
  /// unless `notifyd`'s value is at least as new.
  public static func restoreState(_ name: NotifyName, _ value: UInt64, setTime: UInt64)
    -> Message
  {
    serviceCall(restoreStateMember, [.string(name.rawValue), .uint64(value), .uint64(setTime)])
  }

  /// The rule for `NameOwnerChanged` of `notifyd`'s name.
  public static var serviceOwnerRule: MatchRule {
    .signal(
      interface: "org.freedesktop.DBus", member: "NameOwnerChanged", sender: .bus,
      arg0: service.rawValue)
  }

  /// What a failed call to `notifyd` means in notify terms.
  public static func error(fromService error: DBusError) -> NotifyError {
    switch error.name {
    case .serviceUnknown, .nameHasNoOwner, .noReply, .disconnected, .unknownObject,
      .unknownMethod, .unknownInterface:
      NotifyError(
        .serverNotFound, "no notifyd answers on this bus (\(service)): \(error.message)",
        cause: .bus(error))
    // The bus has a service file but could not start notifyd from it.
    case _ where error.name.rawValue.hasPrefix("org.freedesktop.DBus.Error.Spawn."):
      NotifyError(
        .serverNotFound, "the bus could not start notifyd (\(service)): \(error.message)",
        cause: .bus(error))
    case .accessDenied:
      NotifyError(.notAuthorized, error.message, cause: .bus(error))
    case .invalidArgs:
      NotifyError(.invalidName, error.message, cause: .bus(error))
    default:
      NotifyError(.failed, "\(error.name.rawValue): \(error.message)", cause: .bus(error))
    }
  }

  private static func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef".utf8)
    return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
  }

  private static func hex64(_ value: UInt64) -> String {
    (0..<8).reversed().map { hex(UInt8(truncatingIfNeeded: value >> (UInt64($0) * 8))) }.joined()
  }
}
