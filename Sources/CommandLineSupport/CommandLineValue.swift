/// A type that can be read from a command-line value, such as `Int`, `UInt64` or `Double`.
///
/// ``ParsedArguments/value(_:as:)`` and ``ParsedArguments/Occurrence/value(at:as:)``
/// use it, and turn a thrown ``ValueConversionError`` into a ``CommandLineError`` that names
/// the option and the value: `The value 'x' is invalid for '--count <count>': not an integer`.
///
/// String-backed `CaseIterable` enums conform by adding the conformance; they accept their raw
/// values and list them when the value is wrong:
///
/// ```swift
/// enum Format: String, CaseIterable, CommandLineValue { case text, json }
/// ```
public protocol CommandLineValue: Sendable {
  /// Reads a value from its command-line spelling.
  ///
  /// - Throws: ``ValueConversionError`` saying why `argument` is not a valid value.
  init(commandLineArgument argument: String) throws(ValueConversionError)
}

/// Why a command-line value could not be read, such as `not an integer`.
public struct ValueConversionError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The reason, a phrase without a capital or a full stop: `must not be negative`.
  public var reason: String
  /// The accepted values, when there is a short list of them.
  public var choices: [String]

  /// Creates a conversion error from a reason, and the accepted values if there is a list.
  public init(_ reason: String, choices: [String] = []) {
    self.reason = reason
    self.choices = choices
  }

  /// The reason.
  public var description: String { reason }
}

extension CommandLineValue where Self: FixedWidthInteger {
  /// Reads a decimal integer with an optional sign; rejects overflow and negative unsigned values.
  public init(commandLineArgument argument: String) throws(ValueConversionError) {
    if let value = Self(argument, radix: 10) {
      self = value
      return
    }
    let digits =
      argument.first == "-" || argument.first == "+" ? argument.dropFirst() : argument[...]
    guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else {
      throw ValueConversionError(argument.isEmpty ? "an integer is needed" : "not an integer")
    }
    if argument.first == "-" && !Self.isSigned {
      throw ValueConversionError("must not be negative")
    }
    throw ValueConversionError("out of range (\(Self.min)...\(Self.max))")
  }
}

extension Int: CommandLineValue {}
extension Int32: CommandLineValue {}
extension Int64: CommandLineValue {}
extension UInt: CommandLineValue {}
extension UInt32: CommandLineValue {}
extension UInt64: CommandLineValue {}

extension Double: CommandLineValue {
  /// Reads a finite decimal number such as `2.5` or `1e-3`; rejects `nan`, `inf`, hexadecimal
  /// and values too large for a `Double`.
  public init(commandLineArgument argument: String) throws(ValueConversionError) {
    guard argument.allSatisfy({ "0123456789+-.eE".contains($0) }), let value = Double(argument)
    else {
      throw ValueConversionError(argument.isEmpty ? "a number is needed" : "not a number")
    }
    guard value.isFinite else { throw ValueConversionError("out of range") }
    self = value
  }
}

extension String: CommandLineValue {
  /// Accepts any text unchanged.
  public init(commandLineArgument argument: String) { self = argument }
}

extension CommandLineValue where Self: CaseIterable & RawRepresentable<String> {
  /// Accepts one of the cases' raw values.
  public init(commandLineArgument argument: String) throws(ValueConversionError) {
    guard let value = Self(rawValue: argument) else {
      throw ValueConversionError("not a known value", choices: Self.allCases.map(\.rawValue))
    }
    self = value
  }
}
