/// An ordered scanner over a command line, for tools whose syntax is not getopt's, such as
/// Darwin's notifyutil: single-dash words (`-dispatch`), options with an optional value
/// (`-signal [N]`), numeric options (`-1`) and commands that run left to right.
///
/// Errors are ``CommandLineError``s that name the offending token, so ``CommandRunner`` reports
/// them like any other usage error.
///
/// ```swift
/// var tokens = ArgumentTokens(CommandLine.arguments.dropFirst())
/// while let token = tokens.next() {
///   switch token {
///   case "-p": try post(tokens.nextValue(for: "-p", valueName: "key"))
///   case "-z": delay = try tokens.nextValue(for: "-z", valueName: "msec", as: Int.self)
///   case "-signal", "-sig": signal = try tokens.nextOptionalValue(for: token, as: Int32.self) ?? 1
///   default:
///     guard let count = try ArgumentTokens.numericOption(token) else {
///       throw ArgumentTokens.unknownOption(token)
///     }
///     try watch(tokens.nextValue(for: token, valueName: "key"), count: count)
///   }
/// }
/// ```
public struct ArgumentTokens: Hashable, Sendable {
  /// All the arguments, without the program name.
  public let arguments: [String]
  /// The index in ``arguments`` of the next token ``next()`` returns.
  public private(set) var position: Int

  /// Creates a scanner positioned at the first argument.
  public init(_ arguments: some Sequence<String>) {
    self.arguments = Array(arguments)
    self.position = 0
  }

  /// Whether every token has been consumed.
  public var isAtEnd: Bool { position == arguments.count }

  /// The tokens not consumed yet.
  public var remaining: ArraySlice<String> { arguments[position...] }

  /// The next token, without consuming it.
  public func peek() -> String? {
    isAtEnd ? nil : arguments[position]
  }

  /// Consumes and returns the next token, or returns `nil` at the end.
  public mutating func next() -> String? {
    guard let token = peek() else { return nil }
    position += 1
    return token
  }

  /// Consumes the value of `option`: the next token, whatever it looks like (`-p -x` posts
  /// the name `-x`, as notifyutil does).
  ///
  /// - Throws: ``CommandLineError`` `Missing value for '-p <key>'` at the end.
  public mutating func nextValue(for option: String, valueName: String = "value")
    throws(CommandLineError) -> String
  {
    guard let value = next() else {
      throw .missingValue(label: "\(option) <\(valueName)>", abstract: "")
    }
    return value
  }

  /// Consumes the value of `option` and converts it.
  ///
  /// - Throws: ``CommandLineError`` for a missing value, or
  ///   `The value 'x' is invalid for '-z <msec>': not an integer`.
  public mutating func nextValue<Value: CommandLineValue>(
    for option: String, valueName: String = "value", as type: Value.Type
  ) throws(CommandLineError) -> Value {
    let text = try nextValue(for: option, valueName: valueName)
    return try Self.convert(text, label: "\(option) <\(valueName)>", as: type)
  }

  /// Consumes an optional value of `option`: the next token if there is one and it does not
  /// start with `-` (notifyutil's rule for `-signal [N]`), converted.
  ///
  /// - Returns: The value, or `nil` when the next token is absent or starts with `-`.
  /// - Throws: ``CommandLineError`` when the token taken does not convert:
  ///   `The value 'x' is invalid for '-signal [<value>]': not an integer`.
  public mutating func nextOptionalValue<Value: CommandLineValue>(
    for option: String, valueName: String = "value", as type: Value.Type
  ) throws(CommandLineError) -> Value? {
    guard let text = peek(), !text.hasPrefix("-") else { return nil }
    position += 1
    return try Self.convert(text, label: "\(option) [<\(valueName)>]", as: type)
  }

  /// The count of a numeric option such as notifyutil's `-1` or `-25`.
  ///
  /// - Returns: The number after the dash, or `nil` when `token` is not a dash followed by
  ///   decimal digits only.
  /// - Throws: ``CommandLineError`` when the number does not fit in an `Int`.
  public static func numericOption(_ token: String) throws(CommandLineError) -> Int? {
    let digits = token.dropFirst()
    guard token.hasPrefix("-"), !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber })
    else { return nil }
    return try convert(String(digits), label: "-<count>", as: Int.self)
  }

  /// The error for a token the tool does not know: `Unknown option '-x'`.
  public static func unknownOption(_ token: String) -> CommandLineError {
    .unknownOption(token, suggestion: nil)
  }

  /// The error for a value left over: `Unexpected argument 'x'`.
  public static func unexpectedArgument(_ token: String) -> CommandLineError {
    .unexpectedArguments([token])
  }

  private static func convert<Value: CommandLineValue>(
    _ text: String, label: String, as type: Value.Type
  ) throws(CommandLineError) -> Value {
    do throws(ValueConversionError) {
      return try Value(commandLineArgument: text)
    } catch {
      throw .invalidValue(text, label: label, abstract: "", error: error)
    }
  }
}
