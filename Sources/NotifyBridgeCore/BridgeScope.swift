public import NotifyCore

/// Which names a bridge carries: those in its namespaces, never `self.` names, and
/// `user.uid.N` names only through a namespace that itself names `user.uid.N`.
public struct BridgeScope: Hashable, Sendable {
  /// The namespaces, as configured.
  public let namespaces: [NotifyName]

  /// Creates a scope.
  public init(_ namespaces: [NotifyName]) { self.namespaces = namespaces }

  /// Why `text` cannot be a bridged namespace, or `nil`.
  public static func problem(withNamespace text: String) -> String? {
    if let problem = NotifyName.problem(with: text) { return problem }
    if text == "self" || text.hasPrefix("self.") {
      return "self. names are private to a process and never leave the host"
    }
    if text.hasSuffix(".") {
      return "it ends with '.'; a namespace covers the name itself and the names after its '.'"
    }
    if text.hasPrefix("user.uid."), userDigits(of: text) == nil {
      return "a user.uid. namespace must name the user: user.uid.N or user.uid.N.…"
    }
    return nil
  }

  /// Whether the bridge carries `name`.
  public func contains(_ name: NotifyName) -> Bool {
    if name.isProcessLocal { return false }
    let user = Self.userDigits(of: name.rawValue)
    return namespaces.contains { namespace in
      name.isInside(namespace: namespace.rawValue)
        && (user == nil
          || Self.userDigits(of: namespace.rawValue).map { Array($0) } == user.map { Array($0) })
    }
  }

  /// The digits N of a `user.uid.N` or `user.uid.N.…` name.
  static func userDigits(of name: String) -> Substring.UTF8View? {
    let prefix = "user.uid."
    guard name.utf8.starts(with: prefix.utf8) else { return nil }
    let rest = Substring(name).utf8.dropFirst(prefix.utf8.count)
    let digits = rest.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    guard !digits.isEmpty,
      digits.count == rest.count || rest[digits.endIndex] == UInt8(ascii: ".")
    else { return nil }
    return digits
  }
}
