/// How many times something should happen before a tool stops, such as `--count 3`: a
/// positive decimal integer.
///
/// `0` is refused (`must be at least 1`) rather than read as "stop at once" or "never
/// stop": a watcher told to wait for no delivery has nothing to do, and leaving the option
/// out already means "no limit".
///
/// ```swift
/// let count = try arguments.value("--count", as: Count.self)?.value
/// ```
public struct Count: CommandLineValue, Hashable, Sendable {
  /// The count, at least 1.
  public var value: Int

  /// Reads a count.
  public init(commandLineArgument argument: String) throws(ValueConversionError) {
    let value = try Int(commandLineArgument: argument)
    guard value >= 1 else { throw ValueConversionError("must be at least 1") }
    self.value = value
  }
}

/// How long a tool waits before giving up, such as `--timeout 2.5`: a decimal number of
/// seconds from 0 to ``maximumSeconds``.
///
/// The bound keeps every conversion exact and in range: `1e300` seconds is refused with a
/// usage error instead of trapping where it becomes nanoseconds.
///
/// ```swift
/// if let timeout = try arguments.value("--timeout", as: Timeout.self) {
///   try await Task.sleep(for: timeout.duration)
/// }
/// ```
public struct Timeout: CommandLineValue, Hashable, Sendable {
  /// The longest timeout accepted: 10^9 seconds, about 31.7 years.
  public static let maximumSeconds = 1_000_000_000

  /// The time to wait.
  public var duration: Duration

  /// Reads a number of seconds.
  public init(commandLineArgument argument: String) throws(ValueConversionError) {
    let seconds = try Double(commandLineArgument: argument)
    guard seconds >= 0 else { throw ValueConversionError("must not be negative") }
    guard seconds <= Double(Self.maximumSeconds) else {
      throw ValueConversionError("must be at most \(Self.maximumSeconds) seconds")
    }
    duration = .nanoseconds(Int64((seconds * 1e9).rounded()))
  }
}

extension OptionDescription {
  /// `--count <n>`-style option read as a ``Count``.
  public static func count(_ names: String..., abstract: String) -> OptionDescription {
    OptionDescription(names: names, valueName: "n", abstract: abstract)
  }

  /// `--timeout <seconds>`-style option read as a ``Timeout``.
  public static func timeout(_ names: String..., abstract: String) -> OptionDescription {
    OptionDescription(names: names, valueName: "seconds", abstract: abstract)
  }
}
