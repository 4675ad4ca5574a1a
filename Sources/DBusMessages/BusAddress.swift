public import DBusCodec

/// A D-Bus server address such as `unix:path=/run/user/1000/bus`.
///
/// An address is one or more entries separated by `;`, tried in order. Each entry is a
/// transport, `:`, and comma-separated `key=value` pairs whose values use `%XX` escapes
/// for bytes outside `[-0-9A-Za-z_/.\*]`. Parsing checks that shape, rejects unknown
/// transports, empty or repeated keys and bad escapes, and names what was wrong.
public struct BusAddress: Hashable, Sendable, CustomStringConvertible {
  /// One transport and its parameters.
  public struct Entry: Hashable, Sendable {
    /// The transport, such as `unix` or `tcp`.
    public var transport: String
    /// The parameters, unescaped, in the order written.
    public var parameters: [(key: String, value: String)]

    /// The value of the parameter `key`, if present.
    public subscript(key: String) -> String? {
      parameters.first { $0.key == key }?.value
    }

    public static func == (lhs: Entry, rhs: Entry) -> Bool {
      lhs.transport == rhs.transport
        && lhs.parameters.map(\.key) == rhs.parameters.map(\.key)
        && lhs.parameters.map(\.value) == rhs.parameters.map(\.value)
    }

    public func hash(into hasher: inout Hasher) {
      hasher.combine(transport)
      for parameter in parameters {
        hasher.combine(parameter.key)
        hasher.combine(parameter.value)
      }
    }
  }

  /// The address as written.
  public let rawValue: String
  /// The entries, in the order they are tried.
  public let entries: [Entry]

  /// Transports libdbus can connect to.
  public static let knownTransports: Set<String> = [
    "unix", "tcp", "nonce-tcp", "unixexec", "autolaunch", "launchd", "systemd",
  ]

  /// Parses and checks an address.
  ///
  /// - Throws: ``DBusError`` with name ``DBusError/Name/badAddress`` saying what is
  ///   wrong and where.
  public init(_ string: String) throws(DBusError) {
    func fail(_ problem: String) -> DBusError {
      DBusError(.badAddress, "invalid D-Bus address '\(string)': \(problem)")
    }
    var entries: [Entry] = []
    let texts = string.split(separator: ";", omittingEmptySubsequences: false)
    for (number, text) in texts.enumerated() {
      if text.isEmpty {
        if number > 0 && number == texts.count - 1 { continue }  // a trailing ';' is allowed
        throw fail("entry \(number + 1) is empty")
      }
      guard let colon = text.firstIndex(of: ":") else {
        throw fail("entry \(number + 1) ('\(text)') has no ':' after its transport")
      }
      let transport = String(text[..<colon])
      guard !transport.isEmpty else { throw fail("entry \(number + 1) has no transport") }
      guard Self.knownTransports.contains(transport) else {
        throw fail("unknown transport '\(transport)'")
      }
      var parameters: [(key: String, value: String)] = []
      let rest = text[text.index(after: colon)...]
      if !rest.isEmpty {
        for pair in rest.split(separator: ",", omittingEmptySubsequences: false) {
          guard let equals = pair.firstIndex(of: "=") else {
            throw fail("'\(pair)' in entry \(number + 1) is not key=value")
          }
          let key = String(pair[..<equals])
          guard !key.isEmpty else { throw fail("a key in entry \(number + 1) is empty") }
          guard !parameters.contains(where: { $0.key == key }) else {
            throw fail("key '\(key)' is repeated in entry \(number + 1)")
          }
          let rawValue = pair[pair.index(after: equals)...]
          guard let value = Self.unescape(rawValue) else {
            throw fail(
              "the value of '\(key)' has a bad %-escape or a character that must be escaped")
          }
          parameters.append((key, value))
        }
      }
      if transport == "unix" {
        let locations = ["path", "abstract", "dir", "tmpdir", "runtime"].filter {
          key in parameters.contains { $0.key == key }
        }
        guard locations.count == 1 else {
          throw fail("a unix entry needs exactly one of path, abstract, dir, tmpdir or runtime")
        }
      }
      entries.append(Entry(transport: transport, parameters: parameters))
    }
    guard !entries.isEmpty else { throw fail("it is empty") }
    self.rawValue = string
    self.entries = entries
  }

  /// The address of a Unix socket at `path`.
  public static func unixSocket(_ path: String) -> BusAddress {
    // Escape everything outside the optionally-escaped set.
    var escaped = ""
    for byte in path.utf8 {
      if isOptionallyEscaped(byte) {
        escaped.unicodeScalars.append(UnicodeScalar(byte))
      } else {
        escaped += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
      }
    }
    return BusAddress(
      rawValue: "unix:path=" + escaped,
      entries: [Entry(transport: "unix", parameters: [("path", path)])])
  }

  private init(rawValue: String, entries: [Entry]) {
    self.rawValue = rawValue
    self.entries = entries
  }

  public var description: String { rawValue }

  public static func == (lhs: BusAddress, rhs: BusAddress) -> Bool { lhs.rawValue == rhs.rawValue }
  public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }

  static func isOptionallyEscaped(_ byte: UInt8) -> Bool {
    NameGrammar.isLetterOrUnderscore(byte) || NameGrammar.isDigit(byte)
      || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: ".")
      || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "*")
  }

  private static func unescape(_ text: Substring) -> String? {
    var bytes: [UInt8] = []
    var iterator = text.utf8.makeIterator()
    while let byte = iterator.next() {
      if byte == UInt8(ascii: "%") {
        guard let high = iterator.next().flatMap(hexValue),
          let low = iterator.next().flatMap(hexValue)
        else { return nil }
        bytes.append(high << 4 | low)
      } else if isOptionallyEscaped(byte) {
        bytes.append(byte)
      } else {
        return nil
      }
    }
    return String(validating: bytes, as: UTF8.self)
  }

  private static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
  }
}
