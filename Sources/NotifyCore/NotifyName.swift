#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A notification name, such as `group.example.saved`.
///
/// Names are UTF-8, not empty, at most 511 bytes (Darwin's 512 including the NUL) and
/// contain no NUL. Reverse-DNS names are recommended; nothing else is imposed. Two
/// prefixes have meaning:
///
/// - `self.`: the name never leaves the process (``isProcessLocal``);
/// - `user.uid.<N>` and `user.uid.<N>.…`: only user N or root may post or set state
///   (enforced by `notifyd`); other names under `user.uid.` are root's alone.
public struct NotifyName: Hashable, Sendable, Comparable, CustomStringConvertible,
  ExpressibleByStringLiteral
{
  /// The name.
  public let rawValue: String

  /// The longest name in bytes.
  public static let maximumLength = 511

  /// Creates a name, checking it.
  ///
  /// - Throws: ``NotifyError`` with status ``NotifyStatus/invalidName`` saying why.
  public init(_ name: String) throws(NotifyError) {
    if let problem = Self.problem(with: name) {
      throw NotifyError(.invalidName, "invalid notification name '\(name)': \(problem)")
    }
    rawValue = name
  }

  /// Creates a name from a literal; an invalid literal stops the program.
  public init(stringLiteral value: String) {
    if let problem = Self.problem(with: value) {
      preconditionFailure("invalid notification name literal '\(value)': \(problem)")
    }
    rawValue = value
  }

  /// The reason `name` is not valid, or `nil`.
  public static func problem(with name: String) -> String? {
    let length = name.utf8.count
    if length == 0 { return "it is empty" }
    if length > maximumLength { return "it is \(length) bytes long; the limit is \(maximumLength)" }
    // One `memchr` over a native string's bytes: this runs for every post received.
    let hasNUL =
      name.utf8.withContiguousStorageIfAvailable { memchr($0.baseAddress!, 0, $0.count) != nil }
      ?? name.utf8.contains(0)
    if hasNUL { return "it contains a NUL character" }
    return nil
  }

  /// Whether the name is private to this process (it starts with `self.`).
  public var isProcessLocal: Bool { rawValue.utf8.starts(with: "self.".utf8) }

  /// For `user.uid.N` and `user.uid.N.…` names, N: the uid they belong to (with root).
  ///
  /// N is spelled as Darwin prints a uid: decimal, no sign, no leading zero (`0` itself
  /// excepted), within 32 bits. `nil` for other names, including the names under
  /// `user.uid.` that spell no uid (`user.uid.05`, `user.uid.5x`, `user.uid.`), which
  /// belong to root alone (`Protocol/notifyd.md`, "Access control").
  public var reservedUserID: UInt32? {
    let prefix = "user.uid.".utf8
    guard rawValue.utf8.starts(with: prefix) else { return nil }
    let element = rawValue.utf8.dropFirst(prefix.count).prefix { $0 != UInt8(ascii: ".") }
    guard element.first != UInt8(ascii: "0") || element.count == 1,
      element.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
    else { return nil }
    return UInt32(String(decoding: element, as: UTF8.self))
  }

  /// Whether this name lies in the namespace `prefix`: it equals it or continues it
  /// after a `.`.
  public func isInside(namespace prefix: String) -> Bool {
    rawValue.utf8.elementsEqual(prefix.utf8)
      || (rawValue.utf8.starts(with: prefix.utf8)
        && rawValue.utf8.dropFirst(prefix.utf8.count).first == UInt8(ascii: "."))
  }

  public var description: String { rawValue }

  public static func < (lhs: NotifyName, rhs: NotifyName) -> Bool {
    lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
  }

  /// Byte equality (not `String`'s Unicode equivalence): one comparison of the stored
  /// UTF-8 where the strings are native, as names made from text always are.
  public static func == (lhs: NotifyName, rhs: NotifyName) -> Bool {
    let fast = lhs.rawValue.utf8.withContiguousStorageIfAvailable { left in
      rhs.rawValue.utf8.withContiguousStorageIfAvailable { right in
        left.count == right.count
          && (left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
      }
    }
    return (fast ?? nil) ?? lhs.rawValue.utf8.elementsEqual(rhs.rawValue.utf8)
  }

  /// The UTF-8 bytes and their count, hashed in one call where they are stored
  /// contiguously.
  public func hash(into hasher: inout Hasher) {
    hasher.combine(rawValue.utf8.count)
    let hashed: Void? = rawValue.utf8.withContiguousStorageIfAvailable { bytes in
      hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
    }
    if hashed == nil {
      Array(rawValue.utf8).withUnsafeBytes { hasher.combine(bytes: $0) }
    }
  }
}
