/// A desktop entry file, or any file in its key-file syntax (`mimeapps.list`), parsed per
/// the freedesktop Desktop Entry Specification: `[Group]` headers, `Key=Value` and
/// `Key[locale]=Value` lines, `#` comments and blank lines.
///
/// ```swift
/// let entry = try DesktopEntry(parsing: text, path: path)
/// entry.isDBusActivatable       // DBusActivatable=true
/// entry.strings("MimeType")     // ["x-scheme-handler/readlater"]
/// ```
///
/// Parsing is strict where a mistake would change the meaning: a line that is neither, a
/// key before the first group, a repeated group or key, invalid UTF-8, a NUL byte, or an
/// invalid escape is an error naming the line. Lookups of typed values (``boolean(_:in:)``)
/// fail on values of the wrong type rather than guessing.
public struct DesktopEntry: Sendable, Hashable {
  /// The main group of a desktop entry.
  public static let mainGroup = "Desktop Entry"
  /// The largest file read: 1 MiB.
  public static let maximumSize = 1 << 20

  /// One `[Group]` and its entries, in file order.
  public struct Group: Sendable, Hashable {
    /// The name between the brackets.
    public var name: String
    /// The entries, in file order.
    public var entries: [Entry]
  }

  /// One `Key=Value` line.
  public struct Entry: Sendable, Hashable {
    /// The key, with any `[locale]` suffix.
    public var key: String
    /// The value as written, blanks around `=` dropped, escapes left in.
    public var value: String
  }

  /// The groups, in file order.
  public var groups: [Group]
  /// Where the entry was read from, for messages.
  public var path: String?

  /// Parses key-file text.
  ///
  /// - Parameters:
  ///   - bytes: The file's bytes (UTF-8).
  ///   - path: Where they came from, for error messages.
  /// - Throws: ``DesktopEntryError`` naming the line and the problem.
  public init(parsing bytes: some Collection<UInt8>, path: String? = nil)
    throws(DesktopEntryError)
  {
    self.path = path
    groups = []
    guard bytes.count <= Self.maximumSize else {
      throw DesktopEntryError(
        path: path, line: nil,
        "is \(bytes.count) bytes long; the limit is \(Self.maximumSize)")
    }
    guard let text = String(validating: bytes, as: UTF8.self) else {
      throw DesktopEntryError(path: path, line: nil, "is not valid UTF-8")
    }
    var number = 0
    var seenKeys: Set<String> = []
    for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
      number += 1
      let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
      if line.utf8.contains(0) {
        throw DesktopEntryError(path: path, line: number, "holds a NUL byte")
      }
      let trimmed = line.drop { $0 == " " || $0 == "\t" }
      if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
      if trimmed.hasPrefix("[") {
        guard trimmed.hasSuffix("]"), trimmed.count >= 3 else {
          throw DesktopEntryError(path: path, line: number, "has a group header without ']'")
        }
        let name = String(trimmed.dropFirst().dropLast())
        guard
          name.unicodeScalars.allSatisfy({
            $0.isASCII && $0.value >= 0x20 && $0 != "[" && $0 != "]" && $0.value != 0x7F
          })
        else {
          throw DesktopEntryError(
            path: path, line: number, "has a group name with a character not allowed: [\(name)]")
        }
        guard !groups.contains(where: { $0.name == name }) else {
          throw DesktopEntryError(path: path, line: number, "repeats the group [\(name)]")
        }
        groups.append(Group(name: name, entries: []))
        seenKeys = []
        continue
      }
      guard let equals = trimmed.firstIndex(of: "=") else {
        throw DesktopEntryError(
          path: path, line: number, "is neither a group header, a Key=Value line nor a comment")
      }
      let key = String(trimmed[..<equals].trimmingSpaces)
      guard Self.isValidKey(key) else {
        throw DesktopEntryError(
          path: path, line: number,
          "has an invalid key '\(key)' (printable ASCII without blanks, with an optional [locale])")
      }
      guard !groups.isEmpty else {
        throw DesktopEntryError(path: path, line: number, "has the key \(key) before any group")
      }
      guard seenKeys.insert(key).inserted else {
        throw DesktopEntryError(
          path: path, line: number, "repeats the key \(key) in [\(groups[groups.count - 1].name)]")
      }
      let value = String(trimmed[trimmed.index(after: equals)...].drop { $0 == " " })
      groups[groups.count - 1].entries.append(Entry(key: key, value: value))
    }
  }

  /// A key: printable ASCII but blanks, `=`, `[` and `]` (desktop entries use
  /// `[A-Za-z0-9-]`, `mimeapps.list` MIME types such as `x-scheme-handler/https`), then
  /// optionally `[locale]`.
  static func isValidKey(_ key: String) -> Bool {
    var base = Substring(key)
    if let open = key.firstIndex(of: "[") {
      guard key.hasSuffix("]"), key.index(after: open) < key.index(before: key.endIndex) else {
        return false
      }
      let locale = key[key.index(after: open)..<key.index(before: key.endIndex)]
      guard locale.unicodeScalars.allSatisfy({ $0.isASCII && $0 != "[" && $0 != "]" })
      else { return false }
      base = key[..<open]
    }
    return !base.isEmpty
      && base.unicodeScalars.allSatisfy {
        $0.value > 0x20 && $0.value < 0x7F && $0 != "=" && $0 != "[" && $0 != "]"
      }
  }

  /// The group named `name`.
  public func group(_ name: String) -> Group? { groups.first { $0.name == name } }

  /// The raw value of `key` in `group`, escapes left as written.
  public func rawValue(_ key: String, in group: String = mainGroup) -> String? {
    self.group(group)?.entries.first { $0.key == key }?.value
  }

  /// The `string` value of `key`, its escapes (`\s \n \t \r \\`) decoded.
  ///
  /// - Throws: ``DesktopEntryError`` for an invalid escape.
  public func string(_ key: String, in group: String = mainGroup) throws(DesktopEntryError)
    -> String?
  {
    guard let raw = rawValue(key, in: group) else { return nil }
    return try unescaped(raw, key: key, list: false).first ?? ""
  }

  /// The list value of `key`: items separated by `;` (a final `;` optional), escapes
  /// decoded (`\;` is a `;` inside an item); empty items dropped.
  ///
  /// - Throws: ``DesktopEntryError`` for an invalid escape.
  public func strings(_ key: String, in group: String = mainGroup) throws(DesktopEntryError)
    -> [String]
  {
    guard let raw = rawValue(key, in: group) else { return [] }
    return try unescaped(raw, key: key, list: true).filter { !$0.isEmpty }
  }

  /// The boolean value of `key`: `true` or `false` (and the older `1` and `0`).
  ///
  /// - Throws: ``DesktopEntryError`` for any other value.
  public func boolean(_ key: String, in group: String = mainGroup) throws(DesktopEntryError)
    -> Bool?
  {
    guard let raw = rawValue(key, in: group) else { return nil }
    switch raw.trimmingSpaces {
    case "true", "1": return true
    case "false", "0": return false
    default:
      throw DesktopEntryError(
        path: path, line: nil, "has \(key)=\(raw) in [\(group)], not true or false")
    }
  }

  /// `DBusActivatable=true`: launched by calling `org.freedesktop.Application` on the bus.
  public var isDBusActivatable: Bool { ((try? boolean("DBusActivatable")) ?? nil) ?? false }

  /// `Hidden=true`: the entry was deleted, and hides entries of the same id further on.
  public var isHidden: Bool { ((try? boolean("Hidden")) ?? nil) ?? false }

  /// The `MimeType=` list (`x-scheme-handler/SCHEME` for URL schemes).
  public var mimeTypes: [String] { (try? strings("MimeType")) ?? [] }

  private func unescaped(_ raw: String, key: String, list: Bool) throws(DesktopEntryError)
    -> [String]
  {
    var items: [String] = []
    var current = ""
    var escaping = false
    for character in raw {
      if escaping {
        escaping = false
        switch character {
        case "s": current.append(" ")
        case "n": current.append("\n")
        case "t": current.append("\t")
        case "r": current.append("\r")
        case "\\": current.append("\\")
        case ";" where list: current.append(";")
        default:
          // Exec= keeps its own quoting (`\"`, `\$`) for the field-code parser.
          current.append("\\")
          current.append(character)
        }
      } else if character == "\\" {
        escaping = true
      } else if character == ";" && list {
        items.append(current)
        current = ""
      } else {
        current.append(character)
      }
    }
    if escaping {
      throw DesktopEntryError(path: path, line: nil, "ends the value of \(key) with a lone '\\'")
    }
    if !current.isEmpty || items.isEmpty { items.append(current) }
    return items
  }
}

/// A desktop entry (or `mimeapps.list`) that does not parse: the file, the line when the
/// problem is on one, and what is wrong.
public struct DesktopEntryError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The file, when known.
  public var path: String?
  /// The line number (from 1), when the problem is on one line.
  public var line: Int?
  /// What is wrong, as the end of a sentence about the file.
  public var problem: String

  /// Creates an error.
  public init(path: String?, line: Int?, _ problem: String) {
    self.path = path
    self.line = line
    self.problem = problem
  }

  /// "/path/app.desktop line 3 has the key Name before any group".
  public var description: String {
    (path ?? "the desktop entry") + (line.map { " line \($0)" } ?? "") + " " + problem
  }
}

extension StringProtocol {
  /// Without leading and trailing blanks (spaces and tabs).
  var trimmingSpaces: SubSequence {
    let isText = { (character: Character) in character != " " && character != "\t" }
    guard let first = firstIndex(where: isText), let last = lastIndex(where: isText) else {
      return self[endIndex...]
    }
    return self[first...last]
  }
}
