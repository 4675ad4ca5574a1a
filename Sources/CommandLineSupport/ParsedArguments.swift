/// The options and positional arguments found on a command line by
/// ``CommandDescription/parse(_:)``.
///
/// Options are looked up by any of their names as typed (`"--count"` or `"-c"`), positional
/// arguments by their name (`"name"`). Asking for a name the command does not declare is a
/// programming error and traps.
///
/// ```swift
/// let parsed = try command.parse(CommandLine.arguments.dropFirst())
/// let count = try parsed.value("--count", as: Int.self) ?? 1
/// let names = parsed.values("name")
/// let json = parsed.contains("--json")
/// ```
public struct ParsedArguments: Hashable, Sendable {
  /// One option as it appeared on the command line.
  public struct Occurrence: Hashable, Sendable {
    /// The command's options, shared by every occurrence, so an occurrence copies one
    /// reference rather than a whole description.
    let options: [OptionDescription]
    /// The option's index in ``CommandDescription/options``, so lookups compare integers.
    let index: Int
    /// The name the user typed, such as `-c` for `-c, --count`.
    public var spelling: String
    /// The value, or `nil` for a flag (or an optional value left out).
    public var value: String?
    /// The values after the first, for an option with
    /// ``OptionDescription/additionalValueNames`` (kept apart so the common case allocates
    /// nothing).
    public var additionalValues: [String] = []

    /// The option's description.
    public var option: OptionDescription { options[index] }

    /// Every value: none for a flag, one for most options, more for an option with
    /// ``OptionDescription/additionalValueNames``.
    public var values: [String] { (value.map { [$0] } ?? []) + additionalValues }

    /// Value `position` converted, or `nil` when the occurrence has no such value.
    ///
    /// - Throws: ``CommandLineError`` naming the option as typed and the value:
    ///   `The value 'ten' is invalid for '-s <key> <val>': not an integer`.
    public func value<Value: CommandLineValue>(
      at position: Int = 0, as type: Value.Type
    ) throws(CommandLineError) -> Value? {
      guard position < values.count else { return nil }
      do throws(ValueConversionError) {
        return try Value(commandLineArgument: values[position])
      } catch {
        throw .invalidValue(
          values[position], label: option.spelled(spelling), abstract: option.abstract,
          error: error)
      }
    }
  }

  /// The command that was parsed.
  public let command: CommandDescription
  /// Every option given, in command-line order, for tools where order matters.
  public let occurrences: [Occurrence]
  /// The values of each positional argument, in the order of ``CommandDescription/arguments``.
  let argumentValues: [[String]]

  /// Whether an option was given, or a positional argument received a value.
  public func contains(_ name: String) -> Bool {
    count(name) > 0
  }

  /// How many times an option was given (2 for `-v -v` or `-vv`), or how many values a
  /// positional argument received.
  public func count(_ name: String) -> Int {
    name.hasPrefix("-")
      ? occurrences(of: name).count : argumentValues[declaredArgument(name)].count
  }

  /// The last value given for an option or argument, else the option's default.
  public func value(_ name: String) -> String? {
    entries(name).last?.text
  }

  /// Every value given for an option or argument, else the option's default, if any.
  public func values(_ name: String) -> [String] {
    entries(name).map(\.text)
  }

  /// The last value of an option or argument, converted; else the converted default.
  ///
  /// - Throws: ``CommandLineError`` with code ``CommandLineError/Code/invalidValue`` naming the
  ///   option as typed and the value, such as
  ///   `The value 'ten' is invalid for '-c <count>': not an integer`.
  public func value<Value: CommandLineValue>(
    _ name: String, as type: Value.Type
  ) throws(CommandLineError) -> Value? {
    guard let entry = entries(name).last else { return nil }
    return try converted(entry, to: type)
  }

  /// Every value of an option or argument, converted; else the converted default, if any.
  ///
  /// - Throws: ``CommandLineError`` naming the first value that does not convert.
  public func values<Value: CommandLineValue>(
    _ name: String, as type: Value.Type
  ) throws(CommandLineError) -> [Value] {
    var result: [Value] = []
    for entry in entries(name) { result.append(try converted(entry, to: type)) }
    return result
  }
}

extension ParsedArguments {
  /// Where a value came from, to name it in an error message.
  private enum Source {
    case option(index: Int, spelling: String)
    case defaultValue(index: Int)
    case argument(index: Int)
  }

  /// Converts a value, or throws an error naming it and where it came from.
  private func converted<Value: CommandLineValue>(
    _ entry: (text: String, source: Source), to type: Value.Type
  ) throws(CommandLineError) -> Value {
    do throws(ValueConversionError) {
      return try Value(commandLineArgument: entry.text)
    } catch {
      let (label, abstract) =
        switch entry.source {
        case .option(let index, let spelling):
          (command.options[index].spelled(spelling), command.options[index].abstract)
        case .defaultValue(let index):
          (command.options[index].synopsis, command.options[index].abstract)
        case .argument(let index):
          (command.arguments[index].helpLabel, command.arguments[index].abstract)
        }
      var failure = CommandLineError.invalidValue(
        entry.text, label: label, abstract: abstract, error: error)
      failure.commandPath = command.path
      throw failure
    }
  }

  /// The values given for `name`, or the option's default when none was given.
  private func entries(_ name: String) -> [(text: String, source: Source)] {
    guard name.hasPrefix("-") else {
      let index = declaredArgument(name)
      return argumentValues[index].map { ($0, .argument(index: index)) }
    }
    let index = declaredOption(name)
    let given = occurrences.compactMap { occurrence in
      occurrence.index == index
        ? occurrence.value.map { ($0, Source.option(index: index, spelling: occurrence.spelling)) }
        : nil
    }
    guard given.isEmpty, let defaultValue = command.options[index].defaultValue else {
      return given
    }
    return [(defaultValue, .defaultValue(index: index))]
  }

  private func occurrences(of name: String) -> [Occurrence] {
    let index = declaredOption(name)
    return occurrences.filter { $0.index == index }
  }

  private func declaredOption(_ name: String) -> Int {
    guard let index = command.optionIndex(named: name) else {
      preconditionFailure("'\(command.name)' has no option '\(name)'.")
    }
    return index
  }

  private func declaredArgument(_ name: String) -> Int {
    guard let index = command.arguments.firstIndex(where: { $0.name == name }) else {
      preconditionFailure("'\(command.name)' has no argument '<\(name)>'.")
    }
    return index
  }
}
