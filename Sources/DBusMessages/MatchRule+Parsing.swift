public import DBusCodec

extension MatchRule {
  /// Parses a rule in the bus's text form, such as
  /// `type='signal',interface='org.example.I',arg0='x'`.
  ///
  /// Values may be quoted with `'…'`; outside quotes, `\'` is an apostrophe. Unknown
  /// keys, repeated keys, bad quoting and invalid names are rejected.
  ///
  /// - Throws: ``DBusError`` with name ``DBusError/Name/matchRuleInvalid`` giving the byte
  ///   offset and what was wrong.
  public init(parsing text: String) throws(DBusError) {
    self.init(type: nil)
    let bytes = Array(text.utf8)
    func fail(_ offset: Int, _ problem: String) -> DBusError {
      DBusError(.matchRuleInvalid, "invalid match rule at offset \(offset): \(problem)")
    }
    if bytes.count > Self.maximumLength {
      throw DBusError(
        .matchRuleInvalid,
        "invalid match rule: it is \(bytes.count) bytes long; the limit is \(Self.maximumLength)")
    }
    var index = 0
    var seen: Set<String> = []
    while index < bytes.count {
      let keyStart = index
      while index < bytes.count && bytes[index] != UInt8(ascii: "=") { index += 1 }
      let key = String(decoding: bytes[keyStart..<index], as: UTF8.self)
        .trimmingSpaces()
      guard index < bytes.count else { throw fail(keyStart, "expected '=' after '\(key)'") }
      guard !key.isEmpty else { throw fail(keyStart, "expected a key before '='") }
      index += 1
      var value: [UInt8] = []
      var quoted = false
      while index < bytes.count {
        let byte = bytes[index]
        if quoted {
          if byte == UInt8(ascii: "'") { quoted = false } else { value.append(byte) }
          index += 1
        } else if byte == UInt8(ascii: "'") {
          quoted = true
          index += 1
        } else if byte == UInt8(ascii: "\\") && index + 1 < bytes.count
          && bytes[index + 1] == UInt8(ascii: "'")
        {
          value.append(UInt8(ascii: "'"))
          index += 2
        } else if byte == UInt8(ascii: ",") {
          break
        } else {
          value.append(byte)
          index += 1
        }
      }
      if quoted { throw fail(index, "the quote opened for '\(key)' is not closed") }
      if index < bytes.count { index += 1 }  // the comma
      guard seen.insert(key).inserted else { throw fail(keyStart, "key '\(key)' is repeated") }
      try assign(key: key, value: String(decoding: value, as: UTF8.self), offset: keyStart)
      if index == bytes.count && bytes.last == UInt8(ascii: ",") {
        throw fail(index, "expected a key after ','")
      }
    }
    try validate()
  }

  private mutating func assign(key: String, value: String, offset: Int) throws(DBusError) {
    func name<N: ValidatedName>(_ type: N.Type) throws(DBusError) -> N {
      do {
        return try N(value)
      } catch {
        throw DBusError(
          .matchRuleInvalid, "invalid match rule at offset \(offset): '\(key)': \(error.message)")
      }
    }
    switch key {
    case "type":
      switch value {
      case "signal": type = .signal
      case "method_call": type = .methodCall
      case "method_return": type = .methodReturn
      case "error": type = .error
      default:
        throw DBusError(
          .matchRuleInvalid, "invalid match rule at offset \(offset): unknown type '\(value)'")
      }
    case "sender": sender = try name(BusName.self)
    case "interface": interface = try name(InterfaceName.self)
    case "member": member = try name(MemberName.self)
    case "path": path = try name(ObjectPath.self)
    case "path_namespace": pathNamespace = try name(ObjectPath.self)
    case "destination": destination = try name(BusName.self)
    case "arg0namespace": arg0Namespace = value
    case "eavesdrop":
      throw DBusError(
        .matchRuleInvalid, "invalid match rule at offset \(offset): 'eavesdrop' is not supported")
    default:
      guard key.hasPrefix("arg"), let parsed = Self.argumentKey(key) else {
        throw DBusError(
          .matchRuleInvalid, "invalid match rule at offset \(offset): unknown key '\(key)'")
      }
      if parsed.isPath {
        argumentPaths[parsed.index] = value
      } else {
        arguments[parsed.index] = value
      }
    }
  }

  /// Reads `argN` or `argNpath`, N a decimal number without leading zeros.
  private static func argumentKey(_ key: String) -> (index: Int, isPath: Bool)? {
    var digits = key.dropFirst(3)
    let isPath = digits.hasSuffix("path")
    if isPath { digits = digits.dropLast(4) }
    guard !digits.isEmpty, digits.count <= 2, digits.allSatisfy(\.isASCII),
      digits.first != "0" || digits.count == 1, let index = Int(digits)
    else { return nil }
    return (index, isPath)
  }
}

extension String {
  fileprivate func trimmingSpaces() -> String {
    var slice = Substring(self)
    while slice.first == " " { slice = slice.dropFirst() }
    while slice.last == " " { slice = slice.dropLast() }
    return String(slice)
  }
}
