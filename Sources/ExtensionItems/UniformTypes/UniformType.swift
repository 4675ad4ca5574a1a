/// A uniform type identifier, such as `public.jpeg`: the name of a kind of data.
///
/// A type is only a name; what it conforms to and which tags it has live in a
/// ``UniformTypeRegistry``. Identifiers compare case-insensitively, as `UTTypeEqual` does,
/// while ``identifier`` keeps the spelling it was created with.
public struct UniformType: Sendable, CustomStringConvertible {
  /// The identifier as written, for example `public.plain-text`.
  public let identifier: String

  /// The identifier in lowercase ASCII: the form used for comparison and lookup.
  let key: String

  /// Creates a type from its identifier.
  ///
  /// Any string is accepted; unknown identifiers conform only to themselves.
  public init(_ identifier: String) {
    self.identifier = identifier
    self.key = UniformType.lowercasedASCII(identifier)
  }

  /// The identifier.
  public var description: String { identifier }

  /// Whether this is a dynamic type made by the registry for an unknown tag.
  public var isDynamic: Bool { key.hasPrefix(UniformTypeRegistry.dynamicPrefix) }

  /// Whether this type conforms to `other` in the system registry.
  ///
  /// Every type conforms to itself. Use ``UniformTypeRegistry/conforms(_:to:)`` to take
  /// custom declarations into account.
  public func conforms(to other: UniformType) -> Bool {
    UniformTypeRegistry.system.conforms(self, to: other)
  }

  static func lowercasedASCII(_ string: String) -> String {
    var needsWork = false
    for byte in string.utf8 where byte >= 0x41 && byte <= 0x5A {
      needsWork = true
      break
    }
    guard needsWork else { return string }
    return String(
      decoding: string.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
  }
}

extension UniformType: Hashable {
  /// Whether two types have the same identifier, ignoring ASCII case.
  public static func == (lhs: UniformType, rhs: UniformType) -> Bool { lhs.key == rhs.key }

  /// Hashes the case-folded identifier.
  public func hash(into hasher: inout Hasher) { hasher.combine(key) }
}

extension UniformType: ExpressibleByStringLiteral {
  /// Creates a type from an identifier literal.
  public init(stringLiteral value: String) { self.init(value) }
}
