// The wording of every parse error, in one place so it can be checked against
// swift-argument-parser's (Sources/ArgumentParser/Usage/UsageGenerator.swift).

extension CommandLineError {
  /// An unknown option, such as `Unknown option '--cuont'.
  ///
  /// Did you mean '--count'?`.
  static func unknownOption(_ spelling: String, suggestion: String?) -> CommandLineError {
    let hint = suggestion.map { ". Did you mean '\($0)'?" } ?? ""
    return CommandLineError(.unknownOption, message: "Unknown option '\(spelling)'\(hint)")
  }

  /// An unknown subcommand: `Unknown subcommand 'lsit'. Did you mean 'list'?`.
  static func unknownSubcommand(_ name: String, suggestion: String?) -> CommandLineError {
    let hint = suggestion.map { ". Did you mean '\($0)'?" } ?? ""
    return CommandLineError(.unknownSubcommand, message: "Unknown subcommand '\(name)'\(hint)")
  }

  /// An argument that is not UTF-8, shown with its invalid bytes as `\xE9`:
  /// `The value 'caf\xE9' for '--url' is not valid UTF-8` after an option, else
  /// `The argument 'caf\xE9' is not valid UTF-8`.
  static func invalidEncoding(_ bytes: [UInt8], after previous: String?) -> CommandLineError {
    var shown = ""
    var offset = 0
    var iterator = bytes.makeIterator()
    var parser = Unicode.UTF8.ForwardParser()
    decoding: while true {
      switch parser.parseScalar(from: &iterator) {
      case .valid(let encoded):
        shown.unicodeScalars.append(Unicode.UTF8.decode(encoded))
        offset += encoded.count
      case .error(let length):
        for byte in bytes[offset..<offset + length] {
          let hex = String(byte, radix: 16, uppercase: true)
          shown += "\\x" + (hex.count == 1 ? "0" : "") + hex
        }
        offset += length
      case .emptyInput:
        break decoding
      }
    }
    let message =
      if let previous, CommandDescription.looksLikeOption(previous) {
        "The value '\(shown)' for '\(previous)' is not valid UTF-8"
      } else {
        "The argument '\(shown)' is not valid UTF-8"
      }
    return CommandLineError(.invalidEncoding, message: message)
  }

  /// A missing value: `Missing value for '--count <count>'`, with the option's help line.
  static func missingValue(label: String, abstract: String) -> CommandLineError {
    CommandLineError(
      .missingValue, message: "Missing value for '\(label)'", help: helpLine(label, abstract))
  }

  /// A value given to a flag.
  ///
  /// `The option '--json' does not take any value, but 'yes' was specified.`
  static func unexpectedValue(_ value: String, for spelling: String) -> CommandLineError {
    CommandLineError(
      .unexpectedValue,
      message: "The option '\(spelling)' does not take any value, but '\(value)' was specified.")
  }

  /// A value that does not convert or is not one of the choices.
  ///
  /// `The value 'x' is invalid for '--count <count>': not an integer`, or with a list of
  /// choices `... Please provide one of 'text' and 'json'.`
  static func invalidValue(
    _ value: String, label: String, abstract: String, error: ValueConversionError
  ) -> CommandLineError {
    let head = "The value '\(value)' is invalid for '\(label)'"
    return CommandLineError(
      .invalidValue, message: head + explanation(error), help: helpLine(label, abstract))
  }

  /// A missing positional argument: `Missing expected argument '<name> ...'`.
  static func missingArgument(
    _ argument: ArgumentDescription, commandLineIsEmpty: Bool
  ) -> CommandLineError {
    let label = argument.isRepeating ? "<\(argument.name)> ..." : "<\(argument.name)>"
    return CommandLineError(
      .missingArgument, message: "Missing expected argument '\(label)'",
      help: commandLineIsEmpty ? nil : helpLine(argument.helpLabel, argument.abstract),
      showsFullHelp: commandLineIsEmpty)
  }

  /// Positional values left over: `Unexpected argument 'x'` or `2 unexpected arguments: 'x', 'y'`.
  static func unexpectedArguments(_ values: [String]) -> CommandLineError {
    let message =
      values.count == 1
      ? "Unexpected argument '\(values[0])'"
      : "\(values.count) unexpected arguments: '\(values.joined(separator: "', '"))'"
    return CommandLineError(.unexpectedArgument, message: message)
  }

  private static func helpLine(_ label: String, _ abstract: String) -> String? {
    abstract.isEmpty ? nil : "\(label)  \(abstract.split(separator: "\n").joined(separator: " "))"
  }

  private static func explanation(_ error: ValueConversionError) -> String {
    let quoted = error.choices.map { "'\($0)'" }
    switch quoted.count {
    case 0:
      return ": \(error.reason)"
    case 1...2:
      return ". Please provide one of \(quoted.joined(separator: " and "))."
    case 3...5:
      return
        ". Please provide one of \(quoted.dropLast().joined(separator: ", ")) or \(quoted.last!)."
    default:
      let list = error.choices.map { "  - \($0)" }.joined(separator: "\n")
      return ". Please provide one of the following:\n\(list)"
    }
  }
}
