/// A positional argument of a command, shown as `<name>`.
///
/// Positional arguments are filled in order. Only the last one may repeat, and it takes
/// every remaining positional value.
///
/// ```swift
/// ArgumentDescription("name", abstract: "A notification name to post.", isRepeating: true)
/// ```
public struct ArgumentDescription: Hashable, Sendable {
  /// The name shown as `<name>`, which also looks the argument up in ``ParsedArguments``.
  public var name: String
  /// One sentence describing the argument, shown in the help and the manual page.
  public var abstract: String
  /// Whether the command runs without it; shown in brackets in the usage.
  public var isOptional: Bool
  /// Whether it takes every remaining positional value; shown as `<name> ...`.
  public var isRepeating: Bool

  /// Creates a positional argument.
  public init(_ name: String, abstract: String, isOptional: Bool = false, isRepeating: Bool = false)
  {
    precondition(!name.isEmpty && !name.hasPrefix("-"), "Invalid argument name '\(name)'.")
    self.name = name
    self.abstract = abstract
    self.isOptional = isOptional
    self.isRepeating = isRepeating
  }

  /// The argument as the help's `ARGUMENTS:` section shows it: `<name>`.
  public var helpLabel: String { "<\(name)>" }

  /// The argument as the usage line shows it: `<name>`, `[<name>]`, `<name> ...`.
  var synopsis: String {
    let text = isRepeating ? "<\(name)> ..." : "<\(name)>"
    return isOptional ? "[\(text)]" : text
  }
}
