import ComposeSheet
import Testing

struct TerminalKeyDecoderTests {
  func keys(_ text: String) -> [TerminalKey] {
    var decoder = TerminalKeyDecoder()
    return decoder.decode(Array(text.utf8)) + decoder.flush()
  }

  @Test func printableTextAndControlKeys() {
    #expect(
      keys("ab\r\n\t\u{7F}\u{08}\u{03}\u{01}")
        == [
          .character("a"), .character("b"), .enter, .enter, .tab, .backspace, .backspace,
          .control("c"), .control("a"),
        ])
  }

  @Test func escapeSequences() {
    #expect(
      keys("\u{1B}[A\u{1B}[B\u{1B}[C\u{1B}[D\u{1B}[H\u{1B}[F\u{1B}[3~\u{1B}[Z\u{1B}OH\u{1B}OF")
        == [.up, .down, .right, .left, .home, .end, .delete, .backTab, .home, .end])
    #expect(keys("\u{1B}[1~\u{1B}[4~\u{1B}[7~\u{1B}[8~") == [.home, .end, .home, .end])
    // Modifiers are ignored; unknown sequences are skipped whole.
    #expect(keys("\u{1B}[1;5C\u{1B}[15~x") == [.right, .character("x")])
  }

  @Test func aLoneEscapeWaitsForThePauseThenIsEscape() {
    var decoder = TerminalKeyDecoder()
    #expect(decoder.decode([0x1B]).isEmpty)
    #expect(decoder.hasPending)
    #expect(decoder.flush() == [.escape])
    #expect(!decoder.hasPending)
    #expect(decoder.decode([0x1B, 0x1B, 0x61]) == [.escape, .escape, .character("a")])
  }

  @Test func sequencesAndCharactersSplitAcrossReadsAreKept() {
    var decoder = TerminalKeyDecoder()
    #expect(decoder.decode([0x1B]).isEmpty)
    #expect(decoder.decode(Array("[".utf8)).isEmpty)
    #expect(decoder.decode(Array("3".utf8)).isEmpty)
    #expect(decoder.decode(Array("~".utf8)) == [.delete])
    let euro = Array("€".utf8)
    #expect(decoder.decode(euro.prefix(2)).isEmpty)
    #expect(decoder.decode(euro.suffix(1)) == [.character("€")])
  }

  @Test func malformedInputIsDroppedByteByByte() {
    // A stray continuation byte, an overlong lead, a lead cut by ASCII, NUL and C1 bytes.
    #expect(keys("\u{0}") == [])
    var decoder = TerminalKeyDecoder()
    #expect(
      decoder.decode([0x80, 0xC0, 0xAF, 0xE2, 0x41, 0x1C, 0xFF, 0x42])
        == [.character("A"), .character("B")])
    #expect(decoder.flush() == [])
    // An unterminated CSI as long as the limit is dropped rather than kept for ever.
    var long = TerminalKeyDecoder()
    let garbage = [0x1B, 0x5B] + [UInt8](repeating: 0x30, count: 30)
    #expect(long.decode(garbage).isEmpty)
    #expect(!long.hasPending)
    #expect(long.decode(Array("x".utf8)) == [.character("x")])
  }

  @Test func aBracketedPasteIsTextWithItsLineBreaksAsSpaces() {
    #expect(
      keys("\u{1B}[200~a\nb\u{1B}[201~\r")
        == [.character("a"), .character(" "), .character("b"), .enter])
    // The end marker split across reads.
    var decoder = TerminalKeyDecoder()
    #expect(decoder.decode(Array("\u{1B}[200~x\u{1B}[2".utf8)) == [.character("x")])
    #expect(decoder.decode(Array("01~\r".utf8)) == [.enter])
  }

  /// However the bytes are split between reads, they decode to the same keys: random
  /// inputs over the bytes that matter (ESC, `[`, `O`, digits, `~`, UTF-8 leads, text),
  /// split at random.
  @Test func anySplitDecodesTheSame() {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    func next(_ bound: Int) -> Int {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return Int(state >> 33) % bound
    }
    let alphabet: [UInt8] = [
      0x1B, 0x5B, 0x4F, 0x32, 0x30, 0x31, 0x33, 0x7E, 0x41, 0x5A, 0x3B, 0x0D, 0x7F, 0xC3, 0xA9,
      0xE2, 0x82, 0xAC, 0x61, 0x00, 0x09,
    ]
    for _ in 0..<2000 {
      let bytes = (0..<next(60)).map { _ in alphabet[next(alphabet.count)] }
      var whole = TerminalKeyDecoder()
      let expected = whole.decode(bytes) + whole.flush()
      var split = TerminalKeyDecoder()
      var keys: [TerminalKey] = []
      var index = 0
      while index < bytes.count {
        let end = min(bytes.count, index + 1 + next(5))
        keys += split.decode(bytes[index..<end])
        index = end
      }
      keys += split.flush()
      #expect(keys == expected, "\(bytes)")
    }
  }
}
