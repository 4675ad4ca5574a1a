/// Turns the bytes a terminal sends in raw mode into ``TerminalKey``s.
///
/// Bytes may arrive split anywhere: an escape sequence or a UTF-8 character cut between two
/// reads is kept until the rest arrives. What it understands:
///
/// - printable ASCII and UTF-8 text; malformed UTF-8 is dropped, byte by byte;
/// - `\r` and `\n` (Enter), Tab, DEL and BS (Backspace), Control-A to Control-Z;
/// - CSI sequences (`ESC [` parameters, final byte): arrows `A B C D`, Home `H` / `1~` /
///   `7~`, End `F` / `4~` / `8~`, Delete `3~`, Shift-Tab `Z`; SS3 sequences (`ESC O` and
///   `A B C D H F`), as terminals send in application-cursor mode. Any other well-formed
///   sequence is skipped whole; the first ``maximumSequenceLength`` bytes of a longer one are
///   dropped, whatever follows them;
/// - bracketed paste (`ESC [ 200 ~` … `ESC [ 201 ~`): the text between becomes characters,
///   with line breaks and tabs read as spaces, so pasting several lines never presses Enter;
/// - `ESC` followed by anything else is Escape, then that byte; an `ESC` that ends the input
///   waits, because it may start a sequence: the caller calls ``flush()`` when no byte follows
///   within a short pause (a terminal sends a sequence in one write).
public struct TerminalKeyDecoder: Sendable {
  /// The longest escape sequence kept waiting for its final byte.
  public static let maximumSequenceLength = 32

  private var pending: [UInt8] = []
  private var inPaste = false

  /// Creates a decoder with nothing pending.
  public init() {}

  /// Whether bytes wait for the rest of a sequence or a character.
  public var hasPending: Bool { !pending.isEmpty }

  /// Decodes bytes, keeping an incomplete sequence or character for the next call.
  public mutating func decode(_ bytes: some Sequence<UInt8>) -> [TerminalKey] {
    pending.append(contentsOf: bytes)
    var keys: [TerminalKey] = []
    var index = 0
    while index < pending.count {
      guard let (consumed, decoded) = step(at: index) else { break }
      keys += decoded
      index += consumed
    }
    pending.removeFirst(index)
    return keys
  }

  /// Ends what is pending after a pause: a lone `ESC` is Escape, an incomplete sequence or
  /// character is dropped.
  public mutating func flush() -> [TerminalKey] {
    defer { pending = [] }
    return pending.first == 0x1B && !inPaste ? [.escape] : []
  }

  private static let pasteEnd: [UInt8] = Array("\u{1B}[201~".utf8)

  /// Decodes what starts at `index`: the bytes consumed and the keys they make, or `nil`
  /// when more bytes are needed.
  private mutating func step(at index: Int) -> (Int, [TerminalKey])? {
    let byte = pending[index]
    if inPaste {
      if byte == 0x1B {
        let rest = pending[index...]
        if rest.starts(with: Self.pasteEnd) {
          inPaste = false
          return (Self.pasteEnd.count, [])
        }
        if Self.pasteEnd.starts(with: rest) { return nil }
        return (1, [])
      }
      if byte == 0x0D || byte == 0x0A || byte == 0x09 { return (1, [.character(" ")]) }
      if byte < 0x20 || byte == 0x7F { return (1, []) }
      return character(at: index)
    }
    switch byte {
    case 0x1B: return escape(at: index)
    case 0x0D, 0x0A: return (1, [.enter])
    case 0x09: return (1, [.tab])
    case 0x7F, 0x08: return (1, [.backspace])
    case 0x01...0x1A:
      return (1, [.control(Character(Unicode.Scalar(byte - 1 + UInt8(ascii: "a"))))])
    case 0x00, 0x1C...0x1F: return (1, [])
    default: return character(at: index)
    }
  }

  /// One UTF-8 character at `index`, or nothing for a malformed byte.
  private func character(at index: Int) -> (Int, [TerminalKey])? {
    let byte = pending[index]
    if byte < 0x80 { return (1, [.character(Unicode.Scalar(byte))]) }
    let length: Int
    switch byte {
    case 0xC2...0xDF: length = 2
    case 0xE0...0xEF: length = 3
    case 0xF0...0xF4: length = 4
    default: return (1, [])
    }
    let available = min(length, pending.count - index)
    for offset in 1..<available where pending[index + offset] & 0xC0 != 0x80 {
      return (1, [])
    }
    guard available == length else { return nil }
    let text = String(validating: pending[index..<index + length], as: UTF8.self)
    guard let scalar = text?.unicodeScalars.first else { return (1, []) }
    return (length, [.character(scalar)])
  }

  /// An escape sequence, or Escape, at `index`.
  private mutating func escape(at index: Int) -> (Int, [TerminalKey])? {
    guard index + 1 < pending.count else { return nil }
    switch pending[index + 1] {
    case UInt8(ascii: "["):
      var end = index + 2
      while end < pending.count, end - index < Self.maximumSequenceLength,
        (0x20...0x3F).contains(pending[end])
      {
        end += 1
      }
      // Too long to be a key: dropped, however it ends.
      if end - index >= Self.maximumSequenceLength { return (end - index, []) }
      guard end < pending.count else { return nil }
      let final = pending[end]
      let length = end - index + 1
      guard (0x40...0x7E).contains(final) else { return (length - 1, []) }
      let parameters = String(decoding: pending[(index + 2)..<end], as: UTF8.self)
      return (length, csi(parameters, final: final))
    case UInt8(ascii: "O"):
      guard index + 2 < pending.count else { return nil }
      let keys: [TerminalKey]
      switch pending[index + 2] {
      case UInt8(ascii: "A"): keys = [.up]
      case UInt8(ascii: "B"): keys = [.down]
      case UInt8(ascii: "C"): keys = [.right]
      case UInt8(ascii: "D"): keys = [.left]
      case UInt8(ascii: "H"): keys = [.home]
      case UInt8(ascii: "F"): keys = [.end]
      default: keys = []
      }
      return (3, keys)
    default:
      return (1, [.escape])
    }
  }

  /// The key a CSI sequence stands for; modifiers (`1;5C`) are ignored.
  private mutating func csi(_ parameters: String, final: UInt8) -> [TerminalKey] {
    let first = parameters.split(separator: ";", omittingEmptySubsequences: false).first ?? ""
    switch final {
    case UInt8(ascii: "A"): return [.up]
    case UInt8(ascii: "B"): return [.down]
    case UInt8(ascii: "C"): return [.right]
    case UInt8(ascii: "D"): return [.left]
    case UInt8(ascii: "H"): return [.home]
    case UInt8(ascii: "F"): return [.end]
    case UInt8(ascii: "Z"): return [.backTab]
    case UInt8(ascii: "~"):
      switch first {
      case "1", "7": return [.home]
      case "4", "8": return [.end]
      case "3": return [.delete]
      case "200":
        inPaste = true
        return []
      default: return []
      }
    default: return []
    }
  }
}
