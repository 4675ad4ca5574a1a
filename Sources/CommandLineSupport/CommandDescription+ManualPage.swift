extension CommandDescription {
  /// The manual page for the command, in `man(7)` roff, from the same description as the help.
  ///
  /// The page has NAME, SYNOPSIS, DESCRIPTION (abstract and discussion), ARGUMENTS, OPTIONS
  /// (and a section for each further option section, such as notifyutil's COMMANDS), one
  /// subsection per subcommand, ENVIRONMENT, FILES, EXIT STATUS (each status once: 0, 1, 64
  /// and ``exitStatuses``, a tool's own meaning replacing the generic one), EXAMPLES and SEE
  /// ALSO; empty sections are left out. It carries no date, so it only changes when the
  /// description does and a test can compare it with the checked-in `man/<name>.<section>`,
  /// which every tool prints with `--generate-manual-page`.
  ///
  /// - Parameters:
  ///   - section: The manual section; by default ``manualSection``.
  ///   - source: The footer's source, by default `NotifyBus` and the version.
  public func manualPage(section: Int? = nil, source: String? = nil) -> String {
    let source = source ?? (["NotifyBus"] + (version.map { [$0] } ?? [])).joined(separator: " ")
    let section = section ?? manualSection
    var lines = [
      #".TH "\#(Self.roff(qualifiedName.uppercased()))" "\#(section)" "" "\#(Self.roff(source))" "NotifyBus Manual""#,
      ".SH NAME",
      Self.roff(qualifiedName)
        + (abstract.isEmpty ? "" : #" \- "# + Self.roff(Self.sentence(abstract))),
      ".SH SYNOPSIS",
      ".nh",
      ".ad l",
    ]
    let synopses = subcommands.isEmpty ? [self] : subcommands
    lines += synopses.map { [Self.roffOptions($0.usageLine, command: $0)] }
      .joined(separator: [".br"])
    lines += [".ad", ".hy"]
    lines += descriptionLines(heading: ".SH DESCRIPTION")
    lines += optionLines(heading: ".SH")
    for subcommand in subcommands {
      lines.append(#".SH "\#(Self.roff(subcommand.qualifiedName.uppercased()))""#)
      lines += subcommand.descriptionLines(heading: nil)
      lines += subcommand.optionLines(heading: ".SS")
    }
    /// A section of tagged paragraphs: each term, set by `tag`, then its meaning.
    func tagged(
      _ title: String, _ entries: [(term: String, meaning: String)], tag: (String) -> String
    ) {
      guard !entries.isEmpty else { return }
      lines.append(".SH \(title)")
      for entry in entries {
        lines += [".TP", tag(Self.roff(entry.term))] + Self.roffParagraph(entry.meaning)
      }
    }
    let bold = { ".B " + $0 }
    tagged("ENVIRONMENT", environment.map { ($0.term, $0.meaning) }, tag: bold)
    tagged("FILES", files.map { ($0.term, $0.meaning) }) { #"\fI"# + $0 + #"\fR"# }
    tagged("EXIT STATUS", allExitStatuses.map { ("\($0.code)", $0.meaning) }, tag: bold)
    if !examples.isEmpty {
      lines.append(".SH EXAMPLES")
      for entry in examples {
        lines += Self.roffParagraph(entry.meaning)
        lines += [
          ".PP", ".RS 4", ".nf", #"\fB"# + Self.roff(entry.term) + #"\fR"#, ".fi", ".RE", ".PP",
        ]
      }
      lines.removeLast()
    }
    if !seeAlso.isEmpty {
      lines += [".SH SEE ALSO", seeAlso.map(Self.roff).joined(separator: ", ")]
    }
    return lines.joined(separator: "\n") + "\n"
  }

  /// Every exit status once, in numeric order: the generic meanings of 0, 1 and 64, replaced
  /// by the command's own where it gives one; a subcommand's meanings are prefixed with its
  /// name.
  public var allExitStatuses: [ExitStatus] {
    var specific: [ExitStatus] = exitStatuses
    for subcommand in subcommands {
      specific += subcommand.exitStatuses.map {
        .init($0.code, "\(subcommand.name): \($0.meaning)")
      }
    }
    let generic = [
      ExitStatus(.success, "Success, or help or version printed."),
      ExitStatus(.failure, "A runtime failure, reported on standard error."),
      ExitStatus(.validationFailure, "Bad usage (EX_USAGE), reported on standard error."),
    ]
    var result: [ExitStatus] = []
    for code in Set((generic + specific).map(\.code)).sorted(by: { $0.rawValue < $1.rawValue }) {
      let own = specific.filter { $0.code == code }.map(\.meaning)
      let meanings = own.isEmpty ? generic.filter { $0.code == code }.map(\.meaning) : own
      result.append(ExitStatus(code, meanings.joined(separator: " ")))
    }
    return result
  }

  /// The abstract and discussion paragraphs, under `heading` if given.
  private func descriptionLines(heading: String?) -> [String] {
    let paragraphs = ([abstract] + discussion.split(separator: "\n\n").map(String.init))
      .filter { !$0.isEmpty }
    guard !paragraphs.isEmpty else { return [] }
    return (heading.map { [$0] } ?? [])
      + paragraphs.map(Self.roffParagraph).joined(separator: [".PP"])
  }

  /// ARGUMENTS, OPTIONS and any further option section, each under `heading` (`.SH` or
  /// `.SS`).
  private func optionLines(heading: String) -> [String] {
    var lines: [String] = []
    if !arguments.isEmpty {
      lines.append("\(heading) ARGUMENTS")
      for argument in arguments {
        lines += [".TP", #"\fI"# + Self.roff(argument.helpLabel) + #"\fR"#]
        lines += Self.roffParagraph(argument.abstract)
      }
    }
    for (title, options) in optionSections where !options.isEmpty {
      lines.append("\(heading) \(title.uppercased())")
      for option in options {
        lines += [".TP", Self.roffOptions(option.helpLabel, command: self)]
        lines += Self.roffParagraph(option.helpAbstract)
      }
    }
    return lines
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
      } else if word.hasPrefix("-")
        || command.qualifiedName.split(separator: " ").contains(Substring(word))
      {
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
