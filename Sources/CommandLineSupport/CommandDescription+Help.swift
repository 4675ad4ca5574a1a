extension CommandDescription {
  /// The indent of every entry in the help's sections.
  static let helpIndent = 2
  /// The column where abstracts start in the help's sections.
  static let labelColumnWidth = 26

  /// The help screen, laid out exactly as swift-argument-parser lays it out.
  ///
  /// ```
  /// OVERVIEW: Post notifications on the bus.
  ///
  /// USAGE: notify-post [--state <state>] <name> ...
  ///
  /// ARGUMENTS:
  ///   <name>                  A name to post.
  ///
  /// OPTIONS:
  ///   --state <state>         Set the name's state first.
  ///   --version               Show the version.
  ///   -h, --help              Show help information.
  /// ```
  ///
  /// Entries are indented by 2 and abstracts start in column 26, on the next line when the
  /// label is too long. Text wraps at spaces to `columns`. The result ends with a newline;
  /// ``CommandRunner`` prints one more, as AP does, so the output ends with an empty line.
  ///
  /// - Parameter columns: The width to wrap to; NotifyBus tools always use 80 so the output
  ///   is the same on every terminal and in `Protocol/cli.md`.
  public func helpText(columns: Int = 80) -> String {
    if syntax == .ordered { return orderedHelpText() }
    var overview = abstract
    if !discussion.isEmpty {
      overview += (overview.isEmpty ? "" : "\n") + "\n" + discussion
    }
    var text = overview.isEmpty ? "" : Self.wrap("OVERVIEW: \(overview)", columns: columns) + "\n\n"
    text += "USAGE: \(Self.hangingIndent(usageLine, by: 7))\n\n"
    var sections = [("ARGUMENTS", arguments.map { ($0.helpLabel, $0.abstract) })]
    for (title, options) in optionSections {
      sections.append(
        (
          title.uppercased(),
          options.filter { !$0.isHidden }.map { ($0.helpLabel, $0.helpAbstract) }
        ))
    }
    sections.append(("SUBCOMMANDS", subcommands.map { ($0.name, $0.abstract) }))
    text += sections.filter { !$0.1.isEmpty }.map { title, entries in
      "\(title):\n" + entries.map { helpEntry(label: $0, abstract: $1, columns: columns) }.joined()
    }.joined(separator: "\n")
    if !subcommands.isEmpty {
      text += "\n  See '\(qualifiedName) help <subcommand>' for detailed help.\n"
    }
    return text
  }

  /// The options grouped by ``OptionDescription/section``, `options` first, in the order the
  /// sections first appear; built-in options end the `options` section.
  var optionSections: [(title: String, options: [OptionDescription])] {
    var titles = ["options"]
    for case let title? in options.map(\.section) where !titles.contains(title) {
      titles.append(title)
    }
    return titles.map { title in
      (
        title,
        title == "options"
          ? allOptions.filter { $0.section == nil } : options.filter { $0.section == title }
      )
    }
  }

  /// Darwin's help layout, for ``Syntax/ordered``.
  ///
  /// `usage: <usage line>`, then each option as four spaces, its label without angle
  /// brackets padded to 15 columns and its abstract, with each further section after
  /// `<title>:`. Built-in and hidden options are left out.
  func orderedHelpText() -> String {
    var text = "usage: \(usageLine)\n"
    for (title, options) in optionSections {
      let shown = options.filter {
        !$0.isHidden && $0 != Self.helpOption && $0 != Self.versionOption
      }
      if shown.isEmpty { continue }
      if title != "options" { text += "\(title):\n" }
      for option in shown {
        let label = String(option.helpLabel.filter { $0 != "<" && $0 != ">" })
        let padding = String(repeating: " ", count: max(1, 15 - label.count))
        let margin = "\n" + String(repeating: " ", count: 19)
        text +=
          "    \(label)\(padding)"
          + option.abstract.split(separator: "\n").joined(separator: margin) + "\n"
      }
    }
    return text
  }

  /// The usage line without its `USAGE: ` prefix: ``usage`` if set, else generated as
  /// `name [--option <value>] [--flag] <argument> ...`.
  ///
  /// As in AP, a command with more than 12 options and arguments shows `[<options>]` in
  /// place of its options.
  public var usageLine: String {
    if let usage { return usage }
    if !subcommands.isEmpty { return "\(qualifiedName) <subcommand>" }
    let optionParts = options.filter { !$0.isHidden }.map {
      "[\($0.synopsis)\($0.isRepeatable ? " ..." : "")]"
    }
    let argumentParts = arguments.map(\.synopsis)
    if optionParts.count + argumentParts.count > 12 {
      if argumentParts.isEmpty || argumentParts.count > 12 { return "\(qualifiedName) <options>" }
      return ([qualifiedName, "[<options>]"] + argumentParts).joined(separator: " ")
    }
    return ([qualifiedName] + optionParts + argumentParts).joined(separator: " ")
  }

  /// The short usage printed after an error, on two lines.
  ///
  /// `Usage: notify-post <name> ...` then `  See 'notify-post --help' for more information.`
  public var usageMessage: String {
    "Usage: \(Self.hangingIndent(usageLine, by: 7))\n"
      + "  See '\(qualifiedName) --help' for more information."
  }

  /// One entry of a help section: the label, then the abstract from column 26 on.
  private func helpEntry(label: String, abstract: String, columns: Int) -> String {
    let padded = String(repeating: " ", count: Self.helpIndent) + label
    guard !abstract.isEmpty else { return padded + "\n" }
    let wrapped = Self.wrap(abstract, columns: columns, indent: Self.labelColumnWidth)
    if padded.count < Self.labelColumnWidth {
      return padded + wrapped.dropFirst(padded.count) + "\n"
    }
    return padded + "\n" + wrapped + "\n"
  }

  /// Wraps `text` at spaces so lines fit in `columns`, indenting each non-empty line.
  ///
  /// This is AP's rule, kept exactly so the output matches: lines break at the last space
  /// within `columns - indent` characters, so every line but the text's last stays one
  /// character short of the limit; a word longer than the limit stays whole on its line;
  /// newlines in `text` are kept.
  static func wrap(_ text: String, columns: Int, indent: Int = 0) -> String {
    let width = columns - indent
    guard width > 0 else { return text }
    var lines: [Substring] = []
    var rest = text[...]
    while true {
      let chunk = rest.prefix(width)
      if let newline = chunk.lastIndex(of: "\n") {
        lines += rest[..<newline].split(separator: "\n", omittingEmptySubsequences: false)
        rest = rest[rest.index(after: newline)...]
      } else if chunk.endIndex == rest.endIndex {
        lines.append(rest)
        break
      } else if let space = chunk.lastIndex(of: " ") ?? rest.firstIndex(of: " ") {
        lines.append(rest[..<space])
        rest = rest[rest.index(after: space)...]
      } else {
        lines.append(rest)
        break
      }
    }
    let margin = String(repeating: " ", count: indent)
    return lines.map { $0.isEmpty ? "" : margin + $0 }.joined(separator: "\n")
  }

  /// Indents every line after the first, for multi-line usage strings.
  static func hangingIndent(_ text: String, by count: Int) -> String {
    let margin = String(repeating: " ", count: count)
    return text.split(separator: "\n", omittingEmptySubsequences: false).enumerated().map {
      $0 == 0 || $1.isEmpty ? String($1) : margin + $1
    }.joined(separator: "\n")
  }
}
