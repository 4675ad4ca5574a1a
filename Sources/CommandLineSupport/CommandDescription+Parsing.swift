extension CommandDescription {
  /// Parses a command line, given without the program name.
  ///
  /// The rules are getopt_long's, with swift-argument-parser's messages:
  /// - `--name value`, `--name=value`, `-n value` and `-nvalue` give an option its value; the
  ///   separate form takes the next argument unless it looks like an option (`-x`, `--x`),
  ///   so `--count --json` is a missing value, while negative numbers such as `-5` are values.
  /// - Short flags combine: `-vq` is `-v -q`. Single-dash words such as `-dispatch` match
  ///   whole before being split, and a long name typed with one dash (`-count`) is refused
  ///   with a suggestion rather than read as `-c ount`.
  /// - `--` ends the options: everything after it is positional. A lone `-` is positional.
  /// - An option given again adds an occurrence: ``ParsedArguments/value(_:)`` is the last
  ///   one, ``ParsedArguments/values(_:)`` all of them.
  /// - `-h`/`--help` anywhere before `--` asks for help, whatever else is wrong, and so does
  ///   `--version` when the command has a version.
  ///
  ///
  /// A command with ``subcommands`` reads its first argument as the subcommand (or `help`,
  /// `-h`, `--help`, `--version`) and the rest with the subcommand's rules; a command with the
  /// ``Syntax/ordered`` syntax reads Darwin's rules instead of these. A root command also
  /// accepts the hidden `--generate-completion-script <shell>` and `--generate-manual-page`
  /// as the whole line.
  ///
  /// - Parameter arguments: The arguments, for example `CommandRunner.commandLineArguments()`.
  /// - Returns: The options and positional arguments found.
  /// - Throws: ``CommandLineError`` naming the offending option, value or argument, or
  ///   ``CommandLineError/helpRequested`` or ``CommandLineError/versionRequested``.
  public func parse(
    _ arguments: some Sequence<String>
  ) throws(CommandLineError) -> ParsedArguments {
    let tokens = Array(arguments)
    if parentNames.isEmpty, let request = try Self.generationRequest(tokens) { throw request }
    if !subcommands.isEmpty { return try parseSubcommand(tokens) }
    switch syntax {
    case .getopt: return try parseGetopt(tokens)
    case .ordered: return try parseOrdered(tokens)
    }
  }

  /// `--generate-completion-script <shell>` or `--generate-manual-page` as the whole line.
  private static func generationRequest(_ tokens: [String]) throws(CommandLineError)
    -> CommandLineError?
  {
    switch tokens.first {
    case completionScriptOption:
      guard tokens.count == 2 else {
        throw .missingValue(label: "\(completionScriptOption) <shell>", abstract: "")
      }
      guard let shell = CompletionShell(rawValue: tokens[1]) else {
        throw .invalidValue(
          tokens[1], label: "\(completionScriptOption) <shell>", abstract: "",
          error: ValueConversionError(
            "not a known shell", choices: CompletionShell.allCases.map(\.rawValue)))
      }
      return CommandLineError(.completionScriptRequested, message: shell.rawValue)
    case manualPageOption:
      guard tokens.count == 1 else { throw .unexpectedArguments(Array(tokens.dropFirst())) }
      return CommandLineError(.manualPageRequested, message: "")
    default:
      return nil
    }
  }

  /// The first argument names a subcommand, which parses the rest.
  private func parseSubcommand(_ tokens: [String]) throws(CommandLineError) -> ParsedArguments {
    guard let first = tokens.first else {
      throw CommandLineError(
        .missingArgument, message: "Missing expected argument '<subcommand>'",
        showsFullHelp: true)
    }
    if first == "-h" || first == "--help" { throw .helpRequested }
    if first == "--version" && version != nil { throw .versionRequested }
    if first == "help" {
      let path = Array(tokens.dropFirst())
      guard subcommand(at: path) != nil else {
        throw .unknownSubcommand(path.joined(separator: " "), suggestion: nil)
      }
      var request = CommandLineError.helpRequested
      request.commandPath = path
      throw request
    }
    if Self.looksLikeOption(first) {
      throw .unknownOption(first, suggestion: suggestion(for: first))
    }
    guard let subcommand = subcommands.first(where: { $0.name == first }) else {
      let close = subcommands.map(\.name).map { ($0, Self.editDistance($0, first)) }
        .filter { $0.1 < 4 }.min { $0.1 < $1.1 }?.0
      throw .unknownSubcommand(first, suggestion: close)
    }
    do {
      return try subcommand.parse(tokens.dropFirst())
    } catch {
      var error = error
      error.commandPath.insert(first, at: 0)
      throw error
    }
  }

  /// Darwin's ordered syntax (``Syntax/ordered``).
  private func parseOrdered(_ tokens: [String]) throws(CommandLineError) -> ParsedArguments {
    if tokens.contains(where: { $0 == "-h" || $0 == "-help" }) {
      var request = CommandLineError.helpRequested
      request.helpGoesToStandardError = true
      throw request
    }
    if tokens.contains("--help") { throw .helpRequested }
    if version != nil && tokens.contains("--version") { throw .versionRequested }
    var occurrences: [ParsedArguments.Occurrence] = []
    var positionals: [String] = []
    var index = tokens.startIndex
    let numbered = options.firstIndex(where: \.isNumbered)
    while index < tokens.endIndex {
      let token = tokens[index]
      index += 1
      let number: Int
      if let exact = options.firstIndex(where: { !$0.isNumbered && $0.names.contains(token) }) {
        number = exact
      } else if let numbered, let digits = Self.numberedOption(token) {
        guard Int(digits) != nil else {
          throw .invalidValue(
            String(digits), label: "-<count>", abstract: "",
            error: ValueConversionError("out of range (\(Int.min)...\(Int.max))"))
        }
        number = numbered
      } else if token.hasPrefix("-") && token != "-" {
        throw .unknownOption(token, suggestion: nil)
      } else {
        positionals.append(token)
        continue
      }
      let option = options[number]
      var values: [String] = []
      if option.takesValue && option.isValueOptional {
        if index < tokens.endIndex && !tokens[index].hasPrefix("-") {
          values.append(tokens[index])
          index += 1
        }
      } else if option.takesValue {
        for _ in 0...option.additionalValueNames.count {
          guard index < tokens.endIndex else {
            throw .missingValue(label: option.spelled(token), abstract: option.abstract)
          }
          values.append(tokens[index])
          index += 1
        }
      }
      if let value = values.first, !option.choices.isEmpty && !option.choices.contains(value) {
        throw .invalidValue(
          value, label: option.spelled(token), abstract: option.abstract,
          error: ValueConversionError("not one of the choices", choices: option.choices))
      }
      occurrences.append(
        .init(
          options: options, index: number, spelling: token, value: values.first,
          additionalValues: Array(values.dropFirst())))
    }
    return try arguments(occurrences, positionals, commandLineIsEmpty: tokens.isEmpty)
  }

  /// The digits of a numbered option such as `-25`, or `nil` when `token` is not `-` and
  /// ASCII digits.
  static func numberedOption(_ token: String) -> Substring? {
    let digits = token.dropFirst()
    guard token.hasPrefix("-"), !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber })
    else { return nil }
    return digits
  }

  /// `getopt_long`'s syntax (``Syntax/getopt``).
  private func parseGetopt(_ tokens: [String]) throws(CommandLineError) -> ParsedArguments {
    let optionPart = tokens.prefix { $0 != "--" }
    if optionPart.contains(where: { $0 == "-h" || $0 == "--help" }) { throw .helpRequested }
    if version != nil && optionPart.contains("--version") { throw .versionRequested }

    var occurrences: [ParsedArguments.Occurrence] = []
    var positionals: [String] = []
    var index = tokens.startIndex

    /// Records option `number` as spelled; takes its value from `inline` or the next token.
    func record(_ number: Int, as spelling: String, inline: String?) throws(CommandLineError) {
      let option = options[number]
      guard option.takesValue else {
        if let inline { throw .unexpectedValue(inline, for: spelling) }
        occurrences.append(.init(options: options, index: number, spelling: spelling, value: nil))
        return
      }
      let value: String
      if let inline {
        value = inline
      } else if index < tokens.endIndex && !Self.looksLikeOption(tokens[index]) {
        value = tokens[index]
        index += 1
      } else {
        throw .missingValue(label: option.spelled(spelling), abstract: option.abstract)
      }
      if !option.choices.isEmpty && !option.choices.contains(value) {
        throw .invalidValue(
          value, label: option.spelled(spelling), abstract: option.abstract,
          error: ValueConversionError("not one of the choices", choices: option.choices))
      }
      occurrences.append(
        .init(options: options, index: number, spelling: spelling, value: value))
    }

    while index < tokens.endIndex {
      let token = tokens[index]
      index += 1
      if token == "--" {
        positionals += tokens[index...]
        break
      } else if !Self.looksLikeOption(token) {
        positionals.append(token)
      } else if token.hasPrefix("--") {
        let equals = token.utf8.firstIndex(of: UInt8(ascii: "="))
        let name = equals.map { String(token[..<$0]) } ?? token
        let inline = equals.map { String(token[token.utf8.index(after: $0)...]) }
        guard let number = optionIndex(named: name) else {
          if let inline, allOptions.contains(where: { $0.names.contains(name) }) {
            throw .unexpectedValue(inline, for: name)  // `--help=x`, `--version=x`
          }
          throw .unknownOption(name, suggestion: suggestion(for: name))
        }
        try record(number, as: name, inline: inline)
      } else if let number = optionIndex(named: token) {
        try record(number, as: token, inline: nil)
      } else if allOptions.contains(where: { $0.names.contains("-" + token) }) {
        // `-count` for `--count` would otherwise read as `-c ount`.
        throw .unknownOption(token, suggestion: "-" + token)
      } else {
        // A cluster of short options: `-vq`, `-c5`, `-vc 5`.
        var rest = token.dropFirst()
        while let character = rest.first {
          let isFirst = rest.startIndex == token.index(after: token.startIndex)
          rest = rest.dropFirst()
          let name = "-\(character)"
          if name == "-h" { throw .helpRequested }  // in a cluster such as `-vh`
          guard let number = optionIndex(named: name) else {
            throw isFirst
              ? .unknownOption(token, suggestion: token.count > 2 ? suggestion(for: token) : nil)
              : .unknownOption(name, suggestion: nil)
          }
          if options[number].takesValue {
            try record(number, as: name, inline: rest.isEmpty ? nil : String(rest))
            break
          }
          try record(number, as: name, inline: nil)
        }
      }
    }

    return try arguments(occurrences, positionals, commandLineIsEmpty: tokens.isEmpty)
  }

  /// Fills the declared positional arguments in order and checks that none is missing.
  private func arguments(
    _ occurrences: [ParsedArguments.Occurrence], _ positionals: [String],
    commandLineIsEmpty: Bool
  ) throws(CommandLineError) -> ParsedArguments {
    var remaining = positionals[...]
    var values: [[String]] = []
    for argument in self.arguments {
      let taken = argument.isRepeating ? Array(remaining) : remaining.first.map { [$0] } ?? []
      remaining = remaining.dropFirst(taken.count)
      if taken.isEmpty && !argument.isOptional {
        throw .missingArgument(argument, commandLineIsEmpty: commandLineIsEmpty)
      }
      values.append(taken)
    }
    if !remaining.isEmpty { throw .unexpectedArguments(Array(remaining)) }
    return ParsedArguments(command: self, occurrences: occurrences, argumentValues: values)
  }

  /// The index in ``options`` of the option with this exact spelling, such as `--count`.
  func optionIndex(named name: String) -> Int? {
    options.firstIndex { !$0.isNumbered && $0.names.contains(name) }
  }

  /// The closest long option name to a misspelled one, if it is close enough (AP's rule:
  /// an edit distance under 4).
  func suggestion(for name: String) -> String? {
    let candidates = allOptions.flatMap(\.names).filter { $0.count > 2 }
    let scored = candidates.map { ($0, Self.editDistance($0, name)) }.filter { $0.1 < 4 }
    return scored.min { $0.1 < $1.1 }?.0
  }

  /// Whether `token` is an option rather than a value: it starts with `-`, is not a lone `-`
  /// and is not a negative number such as `-5` or `-.5`.
  static func looksLikeOption(_ token: String) -> Bool {
    var bytes = token.utf8.makeIterator()
    guard bytes.next() == UInt8(ascii: "-"), var next = bytes.next() else { return false }
    if next == UInt8(ascii: ".") {
      guard let digit = bytes.next() else { return true }
      next = digit
    }
    return !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(next)
  }

  /// The Levenshtein distance between two strings, counted in characters.
  static func editDistance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    var previous = Array(0...b.count)
    for (i, x) in a.enumerated() {
      var current = [i + 1]
      for (j, y) in b.enumerated() {
        current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
      }
      previous = current
    }
    return previous[b.count]
  }
}
