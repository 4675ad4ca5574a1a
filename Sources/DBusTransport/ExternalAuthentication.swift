package import DBusCodec

/// The client side of SASL `EXTERNAL`, the authentication every Unix-socket bus accepts:
/// the bus reads the client's uid from the socket and compares it with the one claimed.
///
/// The exchange is pipelined as sd-bus does it: the request, `BEGIN` and the first
/// messages go out in one write, and the bus's one-line answer comes back before its first
/// message.
package enum ExternalAuthentication {
  /// The longest answer line read; libdbus allows 16 KiB.
  package static let maximumLineLength = 16_384

  /// The NUL byte every connection starts with, `AUTH EXTERNAL` with `uid` in hex-encoded
  /// decimal, and `BEGIN`.
  package static func request(uid: UInt32) -> [UInt8] {
    var hex = ""
    for digit in String(uid).utf8 { hex += String(digit, radix: 16) }
    return [0] + Array("AUTH EXTERNAL \(hex)\r\nBEGIN\r\n".utf8)
  }

  /// What the bus answered.
  package enum Answer: Equatable, Sendable {
    /// A whole line arrived; `consumed` bytes, through `\r\n`, belong to it.
    case accepted(guid: String, consumed: Int)
    /// No whole line yet.
    case incomplete
  }

  /// Reads the bus's answer from the start of `input`.
  ///
  /// - Throws: ``DBusError`` with name ``DBusError/Name/authFailed`` for `REJECTED` (naming
  ///   the mechanisms the bus offers) or `ERROR`, and for an answer that is not SASL.
  package static func answer(in input: ArraySlice<UInt8>) throws(DBusError) -> Answer {
    guard let end = input.firstIndex(of: UInt8(ascii: "\n")) else {
      if input.count > maximumLineLength { throw failure("its answer is longer than 16 KiB") }
      return .incomplete
    }
    guard end > input.startIndex, input[end - 1] == UInt8(ascii: "\r") else {
      throw failure("its answer does not end in CR LF")
    }
    let line = input[input.startIndex..<end - 1]
    guard line.allSatisfy({ (0x20...0x7E).contains($0) }) else {
      throw failure("its answer is not printable ASCII")
    }
    let text = String(decoding: line, as: UTF8.self)
    let consumed = end + 1 - input.startIndex
    let words = text.split(separator: " ", maxSplits: 1)
    switch words.first {
    case "OK":
      let guid = words.count == 2 ? String(words[1]) : ""
      guard guid.utf8.count == 32, guid.utf8.allSatisfy(isHexDigit) else {
        throw failure("it answered OK without a 32-digit hex GUID: '\(text)'")
      }
      return .accepted(guid: guid, consumed: consumed)
    case "REJECTED":
      let offered = words.count == 2 ? words[1].split(separator: " ").joined(separator: ", ") : ""
      throw failure(
        "it rejected EXTERNAL authentication for this uid"
          + (offered.isEmpty ? "" : " (it offers: \(offered))"))
    case "ERROR":
      throw failure("it answered ERROR" + (words.count == 2 ? ": \(words[1])" : ""))
    default:
      throw failure("its answer '\(text)' is not a SASL reply")
    }
  }

  private static func isHexDigit(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
      || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
      || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
  }

  private static func failure(_ problem: String) -> DBusError {
    DBusError(.authFailed, "the bus did not authenticate the connection: \(problem)")
  }
}
