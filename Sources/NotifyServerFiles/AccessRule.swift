/// One `reserve PREFIX UID GID MODE` line of the access configuration.
public struct AccessRule: Hashable, Sendable {
  /// Names starting with these bytes are governed by the rule.
  public var prefix: String
  /// The owner's user id.
  public var owner: UInt32
  /// The group id.
  public var group: UInt32
  /// Who may read and write.
  public var mode: AccessMode
  /// The configuration file the rule came from.
  public var path: String
  /// Its 1-based line.
  public var line: Int

  /// Creates a rule.
  public init(
    prefix: String, owner: UInt32, group: UInt32, mode: AccessMode, path: String = "",
    line: Int = 0
  ) {
    self.prefix = prefix
    self.owner = owner
    self.group = group
    self.mode = mode
    self.path = path
    self.line = line
  }

  /// The rule as a configuration line.
  public var text: String { "reserve \(prefix) \(owner) \(group) \(mode)" }

  /// Where the rule came from, for messages: `line 3 of /etc/notify.conf: reserve ...`.
  public var origin: String { "line \(line) of \(path): \(text)" }

  /// Whether `name` starts with the prefix, byte for byte.
  public func governs(_ name: String) -> Bool { name.utf8.starts(with: prefix.utf8) }
}
