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
    abstract.isEmpty ? nil : "\(label)  \(abstract)"
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
