extension CommandDescription {
  /// The manual page for the command, in `man(7)` roff, from the same description as the help.
  ///
  /// The page has NAME, SYNOPSIS, DESCRIPTION (abstract and discussion), ARGUMENTS, OPTIONS
  /// and EXIT STATUS (0, 1, 64 and ``exitStatuses``). It carries no date, so it only changes
  /// when the description does and a test can compare it with the checked-in `man/<name>.1`:
  ///
  /// ```swift
  /// #expect(try String(contentsOfFile: "man/notify-post.1") == command.manualPage())
  /// ```
  ///
  /// - Parameters:
  ///   - section: The manual section, 1 for user commands or 8 for daemons such as `notifyd`.
  ///   - source: The footer's source, by default `NotifyBus` and the version.
  public func manualPage(section: Int = 1, source: String? = nil) -> String {
    let source = source ?? (["NotifyBus"] + (version.map { [$0] } ?? [])).joined(separator: " ")
    var lines = [
      #".TH "\#(Self.roff(name.uppercased()))" "\#(section)" "" "\#(Self.roff(source))" "NotifyBus Manual""#,
      ".SH NAME",
      Self.roff(name) + (abstract.isEmpty ? "" : #" \- "# + Self.roff(Self.sentence(abstract))),
      ".SH SYNOPSIS",
      ".nh",
      ".ad l",
      Self.roffOptions(usageLine, command: self),
      ".ad",
      ".hy",
    ]
    if !abstract.isEmpty || !discussion.isEmpty {
      lines.append(".SH DESCRIPTION")
      let paragraphs = ([abstract] + discussion.split(separator: "\n\n").map(String.init))
        .filter { !$0.isEmpty }
      lines += paragraphs.map(Self.roffParagraph).joined(separator: [".PP"])
    }
    if !arguments.isEmpty {
      lines.append(".SH ARGUMENTS")
      for argument in arguments {
        lines += [".TP", #"\fI"# + Self.roff(argument.helpLabel) + #"\fR"#]
        lines += Self.roffParagraph(argument.abstract)
      }
    }
    lines.append(".SH OPTIONS")
    for option in allOptions {
      lines += [".TP", Self.roffOptions(option.helpLabel, command: self)]
      lines += Self.roffParagraph(option.helpAbstract)
    }
    lines.append(".SH EXIT STATUS")
    let statuses = [
      ExitStatus(.success, "Success, or help or version printed."),
      ExitStatus(.failure, "A runtime failure, reported on standard error."),
      ExitStatus(.validationFailure, "Bad usage (EX_USAGE), reported on standard error."),
    ]
    for status in (statuses + exitStatuses).sorted(by: { $0.code.rawValue < $1.code.rawValue }) {
      lines += [".TP", ".B \(status.code)"]
      lines += Self.roffParagraph(status.meaning)
    }
    return lines.joined(separator: "\n") + "\n"
  }

  /// Escapes text for roff: backslashes, and dashes as minus signs so options copy and paste.
  static func roff(_ text: String) -> String {
    text.replacingAll("\\", with: #"\e"#).replacingAll("-", with: #"\-"#)
  }

  /// A paragraph of text lines, with lines that would read as requests protected.
  static func roffParagraph(_ text: String) -> [String] {
    text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
      let escaped = roff(String(line))
      return escaped.hasPrefix(".") || escaped.hasPrefix("'") ? #"\&"# + escaped : escaped
    }
  }

  /// Sets option names in bold and `<value>` placeholders in italics.
  static func roffOptions(_ text: String, command: CommandDescription) -> String {
    var result = ""
    var word = ""
    func flush() {
      guard !word.isEmpty else { return }
      if word.hasPrefix("<") && word.hasSuffix(">") {
        result += #"\fI"# + roff(word) + #"\fR"#
      } else if word.hasPrefix("-") || word == command.name {
        result += #"\fB"# + roff(word) + #"\fR"#
      } else {
        result += roff(word)
      }
      word = ""
    }
    for character in text {
      if character == "\n" {
        flush()
        result += "\n.br\n"
      } else if " [],.|".contains(character) {
        flush()
        result.append(character)
      } else {
        word.append(character)
      }
    }
    flush()
    return result.hasPrefix(".") || result.hasPrefix("'") ? #"\&"# + result : result
  }

  /// The abstract as the NAME line wants it: no final full stop.
  static func sentence(_ text: String) -> String {
    text.hasSuffix(".") ? String(text.dropLast()) : text
  }
}

extension String {
  /// This string with every `target` replaced, without Foundation.
  fileprivate func replacingAll(_ target: Character, with replacement: String) -> String {
    var result = ""
    for character in self {
      if character == target { result += replacement } else { result.append(character) }
    }
    return result
  }
}
