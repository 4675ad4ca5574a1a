/// A named option or flag of a command, such as `-c, --count <count>` or `--json`.
///
/// Names are written as the user types them: `--count` (long), `-c` (short, one character)
/// or `-dispatch` (a single-dash word, as notifyutil uses). The same spelling looks the option
/// up in ``ParsedArguments``:
///
/// ```swift
/// let count = OptionDescription.option(
///   "--count", "-c", value: "count", abstract: "Exit after this many deliveries.")
/// let verbose = OptionDescription.flag("--verbose", "-v", abstract: "Print notifyutil's format.")
/// ```
public struct OptionDescription: Hashable, Sendable {
  /// The names, as typed on the command line: `--count`, `-c` or `-dispatch`.
  public var names: [String]
  /// The name of the value shown as `<value>`, or `nil` for a flag that takes none.
  public var valueName: String?
  /// One sentence describing the option, shown in the help and the manual page.
  public var abstract: String
  /// The value used when the option is absent, shown as `(default: …)`.
  public var defaultValue: String?
  /// The only values accepted, checked while parsing and shown as `(values: …)`.
  public var choices: [String]
  /// Whether the option may be given several times to collect several values; shown as `...`.
  public var isRepeatable: Bool
  /// A label that replaces the generated one in the help, for irregular syntax such as
  /// notifyutil's `-signal [<signal>]`.
  public var label: String?
  /// Further values the option takes after its first, such as `val` in notifyutil's
  /// `-s <key> <val>` (``CommandDescription/Syntax/ordered`` only).
  public var additionalValueNames: [String] = []
  /// Whether the value may be left out.
  ///
  /// The value is taken only when the next argument does not start with `-`, as in
  /// notifyutil's `-signal [<signal>]` (``CommandDescription/Syntax/ordered`` only).
  public var isValueOptional = false
  /// Whether the option is a number, such as notifyutil's `-5 key`.
  ///
  /// It matches `-` and decimal digits, and its single name (`-#`) only stands for it in the
  /// help (``CommandDescription/Syntax/ordered`` only). ``ParsedArguments/Occurrence/spelling``
  /// holds the number as typed.
  public var isNumbered = false
  /// Whether the help leaves the option out (the manual page still lists it), for
  /// compatibility spellings such as notifyutil's `-plain`.
  public var isHidden = false
  /// The help section that lists the option, such as `commands`; `nil` for `OPTIONS`.
  public var section: String?
  /// What a shell may offer as the value when completing.
  public var completion: Completion = .none

  /// Creates an option from all its parts; ``flag(_:abstract:isRepeatable:)`` and
  /// ``option(_:value:abstract:default:choices:isRepeatable:)`` read better.
  public init(
    names: [String], valueName: String?, abstract: String, defaultValue: String? = nil,
    choices: [String] = [], isRepeatable: Bool = false, label: String? = nil
  ) {
    precondition(!names.isEmpty, "An option needs at least one name.")
    for name in names {
      precondition(Self.isValidName(name), "Invalid option name '\(name)'.")
    }
    precondition(
      valueName != nil || (defaultValue == nil && choices.isEmpty), "A flag has no value.")
    self.names = names
    self.valueName = valueName
    self.abstract = abstract
    self.defaultValue = defaultValue
    self.choices = choices
    self.isRepeatable = isRepeatable
    self.label = label
    self.completion = choices.isEmpty ? .none : .words(choices)
  }

  /// A flag: an option that takes no value, such as `--json` or `-v`.
  public static func flag(
    _ names: String..., abstract: String, isRepeatable: Bool = false
  ) -> OptionDescription {
    OptionDescription(
      names: names, valueName: nil, abstract: abstract, isRepeatable: isRepeatable)
  }

  /// An option that takes a value, written `--name value`, `--name=value` or `-n value`.
  public static func option(
    _ names: String..., value valueName: String, abstract: String,
    default defaultValue: String? = nil,
    choices: [String] = [], isRepeatable: Bool = false
  ) -> OptionDescription {
    OptionDescription(
      names: names, valueName: valueName, abstract: abstract, defaultValue: defaultValue,
      choices: choices, isRepeatable: isRepeatable)
  }

  /// An option whose value is one case of `Choice`, accepted by its raw value.
  ///
  /// Read it back with ``ParsedArguments/value(_:as:)``.
  public static func option<Choice: CaseIterable & RawRepresentable<String>>(
    _ names: String..., value valueName: String, abstract: String, choices: Choice.Type,
    default defaultValue: Choice? = nil
  ) -> OptionDescription {
    OptionDescription(
      names: names, valueName: valueName, abstract: abstract,
      defaultValue: defaultValue?.rawValue, choices: Choice.allCases.map(\.rawValue))
  }

  /// This option with further properties set, for options outside the two common shapes.
  ///
  /// ```swift
  /// .option("-s", value: "key", abstract: "Set the state.").with { $0.additionalValueNames = ["val"] }
  /// ```
  public func with(_ change: (inout OptionDescription) -> Void) -> OptionDescription {
    var copy = self
    change(&copy)
    return copy
  }

  /// Whether this option takes a value.
  public var takesValue: Bool { valueName != nil }

  /// The name used in the usage line and in messages about a default value: the first
  /// double-dash name, else the first name.
  public var preferredName: String { names.first { $0.hasPrefix("--") } ?? names[0] }

  /// The label in the help's `OPTIONS:` section, such as `-c, --count <count>`: short
  /// names first, then long ones.
  public var helpLabel: String {
    if let label { return label }
    let short = names.filter { $0.count == 2 }
    let long = names.filter { $0.count != 2 }
    return spelled((short + long).joined(separator: ", "))
  }

  /// The option as the usage line shows it, such as `--count <count>`.
  var synopsis: String { spelled(preferredName) }

  /// `name` followed by the value placeholder when the option takes a value.
  func spelled(_ name: String) -> String {
    guard let valueName else { return name }
    if isValueOptional { return "\(name) [<\(valueName)>]" }
    return ([name] + ([valueName] + additionalValueNames).map { "<\($0)>" }).joined(separator: " ")
  }

  /// The abstract followed by the choices and the default, as the help shows it.
  var helpAbstract: String {
    var notes: [String] = []
    if !choices.isEmpty { notes.append("values: " + choices.joined(separator: ", ")) }
    if let defaultValue, !defaultValue.isEmpty { notes.append("default: \(defaultValue)") }
    guard !notes.isEmpty else { return abstract }
    let suffix = "(\(notes.joined(separator: "; ")))"
    return abstract.isEmpty ? suffix : "\(abstract) \(suffix)"
  }

  /// Whether `name` is a name the parser can match: `-x`, `--word` or `-word`, not starting
  /// like a negative number, without `=` or spaces.
  static func isValidName(_ name: String) -> Bool {
    CommandDescription.looksLikeOption(name) && name != "--" && !name.hasPrefix("---")
      && !name.contains { $0 == "=" || $0.isWhitespace }
  }
}

extension OptionDescription {
  /// What a shell offers when completing an option's value.
  public enum Completion: Hashable, Sendable {
    /// Nothing in particular (the shell's default, usually file names, is not offered).
    case none
    /// File names.
    case file
    /// Directory names.
    case directory
    /// These words.
    case words([String])
  }
}
