import ComposeSheet
import Testing

struct ComposeSheetTests {
  static let preview = ComposeSheet.Preview(
    title: "Swift documentation", url: "https://www.swift.org/documentation/",
    attachments: [
      "https://www.swift.org/documentation/ (public.url)", "doorbell.png (public.png, 156 bytes)",
    ])

  /// A loaded sheet fed `input` as the terminal would send it.
  func sheet(_ input: String, text: String = "") -> ComposeSheet {
    var sheet = ComposeSheet(heading: "Read Later", text: text)
    sheet.finishLoading(Self.preview)
    var decoder = TerminalKeyDecoder()
    for key in decoder.decode(Array(input.utf8)) + decoder.flush() { sheet.handle(key) }
    return sheet
  }

  @Test func whileLoadingItShowsASpinnerAndOnlyCancelWorks() {
    var sheet = ComposeSheet(heading: "Read Later")
    #expect(sheet.isLoading)
    let first = sheet.render(width: 60, height: 20).plainLines
    #expect(first.contains("| Loading the shared items..."))
    sheet.tick()
    #expect(
      sheet.render(width: 60, height: 20).plainLines.contains("/ Loading the shared items..."))
    sheet.handle(.character("x"))
    sheet.handle(.enter)
    #expect(sheet.outcome == nil)
    #expect(sheet.text == "")
    sheet.handle(.escape)
    #expect(sheet.outcome == .cancel)
  }

  @Test func itShowsTheTitleURLAndAttachments() {
    let lines = sheet("").render(width: 60, height: 20).plainLines
    #expect(lines[0] == "Read Later")
    #expect(lines[1].hasPrefix("[ Cancel ]") && lines[1].hasSuffix("[ Post ]"))
    #expect(lines.contains("Title: Swift documentation"))
    #expect(lines.contains("URL:   https://www.swift.org/documentation/"))
    #expect(lines.contains("  - doorbell.png (public.png, 156 bytes)"))
    #expect(lines.contains("Text: "))
  }

  @Test func postIsRefusedWhileTheTextIsEmptyAndSaysWhy() {
    var refused = sheet("\r")
    #expect(refused.outcome == nil)
    #expect(refused.notice == ComposeSheet.emptyTextReason)
    #expect(refused.render(width: 60, height: 20).plainLines.contains(ComposeSheet.emptyTextReason))
    refused.handle(.character("a"))
    #expect(refused.notice == nil)
    refused.handle(.enter)
    #expect(refused.outcome == .post("a"))
  }

  @Test func lineEditing() {
    // Type, move left twice, insert, Home, Delete, End, Backspace.
    #expect(
      sheet("hello\u{1B}[D\u{1B}[DX\u{1B}[H\u{1B}[3~\u{1B}[F\u{7F}\r").outcome == .post("elXl"))
    #expect(sheet("one two\u{17}three\r").outcome == .post("one three"))
    #expect(sheet("abc\u{1B}[D\u{0B}\r").outcome == .post("ab"))
    #expect(sheet("abc\u{1B}[D\u{15}\r").outcome == .post("c"))
    #expect(sheet("\u{1B}[D\u{7F}é\r", text: "x").outcome == .post("éx"))
  }

  @Test func tabMovesTheFocusAndEnterPressesTheFocusedButton() {
    #expect(sheet("note\t\t\r").outcome == .cancel)
    #expect(sheet("note\t\r").outcome == .post("note"))
    #expect(sheet("note\u{1B}[Z\r").outcome == .cancel)
    var focused = sheet("note\t")
    #expect(focused.focus == .post)
    #expect(focused.render(width: 60, height: 20).plainLines[1].hasSuffix("> Post <"))
    // Typing on a button goes back to the text.
    focused.handle(.character("s"))
    #expect(focused.focus == .text)
    #expect(focused.text == "notes")
  }

  @Test func escapeAndControlCCancel() {
    #expect(sheet("typed\u{1B}").outcome == .cancel)
    #expect(sheet("typed\u{03}").outcome == .cancel)
  }

  @Test func linesFitTheTerminalAndTheCursorStaysInTheField() {
    let long = String(repeating: "w", count: 100)
    let screen = sheet(long).render(width: 30, height: 12)
    #expect(screen.lines.count <= 12)
    for line in screen.plainLines { #expect(line.count <= 30, "\(line)") }
    let cursor = screen.cursor
    #expect(cursor?.column == 29)
    let row = screen.plainLines[cursor?.row ?? 0]
    #expect(row.hasPrefix("Text: w"))
    // Attachments that do not fit are counted.
    var many = ComposeSheet(heading: "H")
    many.finishLoading(.init(attachments: (1...30).map { "file\($0)" }))
    #expect(many.render(width: 40, height: 14).plainLines.contains { $0.contains("more") })
  }

  @Test func theANSIFormCannotCarryControlCharactersFromTheText() {
    var sheet = ComposeSheet(heading: "Evil\u{1B}[2J")
    sheet.finishLoading(.init(title: "t\u{07}"))
    let ansi = sheet.render(width: 40, height: 10).ansi
    #expect(!ansi.contains("Evil\u{1B}"))
    #expect(ansi.contains("Evil?[2J"))
    #expect(ansi.hasPrefix("\u{1B}[?25l\u{1B}[H"))
  }
}
