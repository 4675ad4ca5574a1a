/// What ``ComposeSheet/render(width:height:)`` draws: lines of styled text and where the
/// cursor goes.
public struct Screen: Hashable, Sendable {
  /// A run of text in one style.
  public struct Span: Hashable, Sendable {
    /// The text, without control characters.
    public var text: String
    /// How it is drawn.
    public var style: Style

    /// Creates a span.
    public init(_ text: String, _ style: Style = .plain) {
      self.text = text
      self.style = style
    }
  }

  /// How a span is drawn.
  public enum Style: Hashable, Sendable {
    /// Normal text.
    case plain
    /// Bold (SGR 1).
    case bold
    /// Faint (SGR 2): what cannot be used yet.
    case dim
    /// Reverse video (SGR 7): the focused button.
    case reverse
  }

  /// One line: its spans, left to right.
  public typealias Line = [Span]

  /// A zero-based row and column.
  public struct Position: Hashable, Sendable {
    /// The row, from the top.
    public var row: Int
    /// The column, from the left.
    public var column: Int

    /// Creates a position.
    public init(row: Int, column: Int) {
      self.row = row
      self.column = column
    }
  }

  /// The lines, top to bottom.
  public var lines: [Line]
  /// Where the cursor shows, or `nil` to hide it.
  public var cursor: Position?

  /// Creates a screen.
  public init(lines: [Line], cursor: Position?) {
    self.lines = lines
    self.cursor = cursor
  }

  /// The lines without styles, as `tmux capture-pane` shows them.
  public var plainLines: [String] { lines.map { $0.map(\.text).joined() } }

  /// The bytes that draw this screen over the previous one.
  ///
  /// Home, each line followed by erase-to-end-of-line, erase below, then the cursor placed
  /// (or hidden). Control characters in the text are shown as `?`, so text cannot move the
  /// cursor or change modes.
  public var ansi: String {
    var out = "\u{1B}[?25l\u{1B}[H"
    for (index, line) in lines.enumerated() {
      if index > 0 { out += "\r\n" }
      for span in line {
        let code: String? =
          switch span.style {
          case .plain: nil
          case .bold: "1"
          case .dim: "2"
          case .reverse: "7"
          }
        if let code { out += "\u{1B}[\(code)m" }
        out += Self.printable(span.text)
        if code != nil { out += "\u{1B}[0m" }
      }
      out += "\u{1B}[K"
    }
    out += "\u{1B}[J"
    if let cursor { out += "\u{1B}[\(cursor.row + 1);\(cursor.column + 1)H\u{1B}[?25h" }
    return out
  }

  private static func printable(_ text: String) -> String {
    var result = ""
    for scalar in text.unicodeScalars {
      let isControl = scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
      result.unicodeScalars.append(isControl ? "?" : scalar)
    }
    return result
  }
}
