/// The compose sheet of a share extension, for a terminal: `SLComposeServiceViewController`'s
/// preview, editable content text, Post and Cancel, as a state machine.
///
/// It does no I/O. A driver feeds it keys (``handle(_:)``, from ``TerminalKeyDecoder``), the
/// loaded preview (``finishLoading(_:)``) and clock ticks (``tick()``), and draws
/// ``render(width:height:)`` after each; it stops when ``outcome`` is set.
///
/// - **Loading**: a spinner while the providers load; Escape or Control-C cancels.
/// - **Editing**: the preview (title, URL, attachments), the content text with a cursor, and
///   the buttons. Typing edits the text (Left, Right, Home, End, Backspace, Delete,
///   Control-A/E/K/U/W as in a shell); Tab and Shift-Tab move the focus between the text,
///   Post and Cancel; Enter presses the focused button (Post from the text); Escape or
///   Control-C cancels.
/// - **Post** is refused while ``isContentValid`` is false (the seed's rule: the text is not
///   empty), with the reason shown under the text.
public struct ComposeSheet: Sendable {
  /// What the sheet shows of the shared items once they are loaded.
  public struct Preview: Hashable, Sendable {
    /// The item's title, if any.
    public var title: String?
    /// The first web URL, if any.
    public var url: String?
    /// One line per attachment, such as `doorbell.png (public.png, 156 bytes)`.
    public var attachments: [String]

    /// Creates a preview.
    public init(title: String? = nil, url: String? = nil, attachments: [String] = []) {
      self.title = title
      self.url = url
      self.attachments = attachments
    }
  }

  /// How the sheet ended.
  public enum Outcome: Hashable, Sendable {
    /// Post was pressed with valid content: the text to post.
    case post(String)
    /// Cancel was pressed (`cancelRequest(withError:)`).
    case cancel
  }

  /// What has the keyboard focus.
  public enum Focus: Hashable, Sendable {
    /// The content text.
    case text
    /// The Post button.
    case post
    /// The Cancel button.
    case cancel
  }

  /// The sheet's heading: the extension's name.
  public var heading: String
  /// The preview, `nil` while the providers load.
  public private(set) var preview: Preview?
  /// How the sheet ended, `nil` while it is open.
  public private(set) var outcome: Outcome?
  /// What has the focus.
  public private(set) var focus: Focus = .text
  /// Why the last Post was refused, until the next edit.
  public private(set) var notice: String?
  /// The spinner's frame, advanced by ``tick()``.
  public private(set) var spinnerFrame = 0
  private var scalars: [Unicode.Scalar]
  /// The cursor, as an offset in Unicode scalars into the text.
  public private(set) var cursor: Int

  /// The reason Post is refused when the text is empty, as the seed's `isContentValid()` is.
  public static let emptyTextReason = "Post needs some text: the text is empty."

  /// Creates a sheet in the loading phase.
  ///
  /// - Parameters:
  ///   - heading: The extension's name, shown at the top.
  ///   - text: The initial content text, with the cursor at its end.
  public init(heading: String, text: String = "") {
    self.heading = heading
    scalars = Array(text.unicodeScalars)
    cursor = scalars.count
  }

  /// The content text.
  public var text: String {
    var result = ""
    result.unicodeScalars.append(contentsOf: scalars)
    return result
  }

  /// Whether the providers are still loading.
  public var isLoading: Bool { preview == nil && outcome == nil }

  /// The seed's `isContentValid()`: the content text is not empty.
  public var isContentValid: Bool { !scalars.isEmpty }

  /// Ends loading: the sheet shows the preview and takes edits.
  public mutating func finishLoading(_ preview: Preview) {
    guard outcome == nil else { return }
    self.preview = preview
  }

  /// Advances the loading spinner.
  public mutating func tick() { spinnerFrame = (spinnerFrame + 1) % Self.spinner.count }

  /// Handles one key.
  public mutating func handle(_ key: TerminalKey) {
    guard outcome == nil else { return }
    switch key {
    case .escape, .control("c"):
      outcome = .cancel
      return
    default:
      break
    }
    guard preview != nil else { return }
    switch key {
    case .tab: focus = Self.order[(Self.order.firstIndex(of: focus)! + 1) % 3]
    case .backTab: focus = Self.order[(Self.order.firstIndex(of: focus)! + 2) % 3]
    case .enter: press(focus == .cancel ? .cancel : .post)
    case .character(let scalar):
      focus = .text
      scalars.insert(scalar, at: cursor)
      cursor += 1
      notice = nil
    default:
      if focus == .text {
        edit(key)
      } else if key == .left || key == .right {
        focus = focus == .post ? .cancel : .post
      }
    }
  }

  /// Tab order: the text, then Post, then Cancel.
  private static let order: [Focus] = [.text, .post, .cancel]

  private mutating func press(_ button: Focus) {
    if button == .cancel {
      outcome = .cancel
    } else if isContentValid {
      outcome = .post(text)
    } else {
      notice = Self.emptyTextReason
    }
  }

  /// A line-editing key while the text has the focus.
  private mutating func edit(_ key: TerminalKey) {
    let before = scalars
    switch key {
    case .left: cursor = max(0, cursor - 1)
    case .right: cursor = min(scalars.count, cursor + 1)
    case .home, .control("a"): cursor = 0
    case .end, .control("e"): cursor = scalars.count
    case .backspace, .control("h"):
      if cursor > 0 {
        scalars.remove(at: cursor - 1)
        cursor -= 1
      }
    case .delete, .control("d"):
      if cursor < scalars.count { scalars.remove(at: cursor) }
    case .control("u"):
      scalars.removeFirst(cursor)
      cursor = 0
    case .control("k"):
      scalars.removeLast(scalars.count - cursor)
    case .control("w"):
      var start = cursor
      while start > 0, scalars[start - 1] == " " { start -= 1 }
      while start > 0, scalars[start - 1] != " " { start -= 1 }
      scalars.removeSubrange(start..<cursor)
      cursor = start
    default:
      break
    }
    if scalars != before { notice = nil }
  }

  // MARK: Rendering

  private static let spinner: [String] = ["|", "/", "-", "\\"]

  /// Draws the sheet for a terminal of `width` columns and `height` rows.
  ///
  /// Every line fits the width (one column per Unicode scalar is assumed; wider characters
  /// may overflow), and at most `height` lines are drawn: attachments that do not fit are
  /// summarized as `... and N more`.
  public func render(width: Int, height: Int) -> Screen {
    let width = max(width, 20)
    var lines: [Screen.Line] = [
      [.init(heading, .bold)],
      buttons(width: width),
      [.init(String(repeating: "-", count: width))],
    ]
    var cursor: Screen.Position?
    if let preview {
      var details: [Screen.Line] = []
      if let title = preview.title { details.append([.init("Title: " + title)]) }
      if let url = preview.url { details.append([.init("URL:   " + url)]) }
      if !preview.attachments.isEmpty {
        details.append([.init("Attachments:")])
        details += preview.attachments.map { [.init("  - " + $0)] }
      }
      // Heading, buttons, rule, details, rule, blank, text, blank, notice, help: the details
      // get what the rest leaves.
      let room = max(1, height - 10)
      if details.count > room {
        let hidden = details.count - (room - 1)
        details = Array(details.prefix(room - 1)) + [[.init("  ... and \(hidden) more")]]
      }
      lines += details
      lines.append([.init(String(repeating: "-", count: width))])
      lines.append([])
      let (field, column) = textField(width: width)
      if focus == .text { cursor = Screen.Position(row: lines.count, column: column) }
      lines.append(field)
      lines.append([])
      if let notice {
        lines.append([.init(notice, .bold)])
      } else if !isContentValid {
        lines.append([.init("Type the text to post.", .dim)])
      } else {
        lines.append([])
      }
      lines.append([
        .init("Enter: Post  Esc: Cancel  Tab: next button  Left/Right: move", .dim)
      ])
    } else {
      lines.append([.init(Self.spinner[spinnerFrame] + " Loading the shared items...")])
    }
    lines = lines.map { Self.truncated($0, width: width) }
    if lines.count > height { lines.removeLast(lines.count - max(height, 1)) }
    if let position = cursor, position.row >= lines.count { cursor = nil }
    return Screen(lines: lines, cursor: cursor)
  }

  /// `[ Cancel ]` at the left, `[ Post ]` at the right; the focused one reversed and marked.
  private func buttons(width: Int) -> Screen.Line {
    func button(_ label: String, _ which: Focus, enabled: Bool) -> Screen.Span {
      let focused = focus == which && preview != nil
      let text = focused ? "> \(label) <" : "[ \(label) ]"
      return .init(text, focused ? .reverse : enabled ? .plain : .dim)
    }
    let cancel = button("Cancel", .cancel, enabled: true)
    let post = button("Post", .post, enabled: preview != nil && isContentValid)
    let gap = max(1, width - cancel.text.count - post.text.count)
    return [cancel, .init(String(repeating: " ", count: gap)), post]
  }

  /// The text field `Text: ...` scrolled so the cursor shows, and the cursor's column.
  private func textField(width: Int) -> (Screen.Line, Int) {
    let label = "Text: "
    let room = width - label.count - 1
    let start = max(0, cursor - room)
    let end = min(scalars.count, start + room)
    var shown = ""
    shown.unicodeScalars.append(contentsOf: scalars[start..<end])
    return ([.init(label, .bold), .init(shown)], label.count + cursor - start)
  }

  private static func truncated(_ line: Screen.Line, width: Int) -> Screen.Line {
    var left = width
    var result: Screen.Line = []
    for span in line {
      guard left > 0 else { break }
      let count = span.text.unicodeScalars.count
      if count <= left {
        result.append(span)
        left -= count
      } else {
        var text = ""
        let marker = left >= 6 ? "..." : ""
        text.unicodeScalars.append(contentsOf: span.text.unicodeScalars.prefix(left - marker.count))
        result.append(.init(text + marker, span.style))
        left = 0
      }
    }
    return result
  }
}
