// libFuzzer harness for the compose sheet's key decoder and state machine.
//
// Any bytes, fed whole and again split at every 7th byte, must decode to the same keys
// (a sequence cut between reads is kept, not lost or doubled), and the sheet they drive must
// keep its cursor inside its text and draw lines that fit the terminal, never with a
// control character inside.

import ComposeSheet

public func fuzz(_ bytes: [UInt8]) {
  var whole = TerminalKeyDecoder()
  let keys = whole.decode(bytes) + whole.flush()
  var split = TerminalKeyDecoder()
  var splitKeys: [TerminalKey] = []
  var index = 0
  while index < bytes.count {
    let end = min(bytes.count, index + 7)
    splitKeys += split.decode(bytes[index..<end])
    index = end
  }
  splitKeys += split.flush()
  precondition(keys == splitKeys, "split input decoded differently")

  var sheet = ComposeSheet(heading: "Fuzz", text: "start")
  sheet.finishLoading(.init(title: "A title", url: "https://example.com/", attachments: ["a"]))
  for key in keys {
    sheet.handle(key)
    precondition(sheet.cursor >= 0 && sheet.cursor <= sheet.text.unicodeScalars.count)
  }
  for (width, height) in [(20, 5), (80, 24)] {
    let screen = sheet.render(width: width, height: height)
    precondition(screen.lines.count <= height)
    for line in screen.plainLines {
      precondition(line.unicodeScalars.count <= width, "a line is wider than \(width)")
    }
    precondition(!screen.ansi.unicodeScalars.contains { $0.value == 0 })
  }
}
