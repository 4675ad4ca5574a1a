// libFuzzer harness for CommandLineSupport: the input is an argv, its arguments separated by
// NUL bytes. Every input is parsed against a command with every kind of option, its values
// are read back as every type, its error is rendered, and the same tokens are read the way
// notifyutil's ordered syntax and a command with subcommands read them. Nothing may crash, and the invariants below must hold.
// Text checks compare UTF-8 bytes: a value starting with a combining mark joins the quote
// before it into one Character, which is right for display but defeats `hasPrefix`.

/// The output formats of ``command``.
enum Format: String, CaseIterable, CommandLineValue {
  case text
  case json
  case verbose
}

let command = CommandDescription(
  name: "notify-watch",
  abstract: "Print a line for each notification posted under the given names.",
  discussion:
    "Each delivery is written as soon as it arrives, even when standard output is a pipe.",
  version: "0.1.0",
  arguments: [
    ArgumentDescription("first", abstract: "The first name."),
    ArgumentDescription("second", abstract: "", isOptional: true),
    ArgumentDescription("name", abstract: "More names.", isOptional: true, isRepeating: true),
  ],
  options: [
    .option("--bus", value: "address", abstract: "The bus to use.", default: "session"),
    .option("--count", "-c", value: "count", abstract: "Exit after this many deliveries."),
    .option("--timeout", "-t", value: "seconds", abstract: "Give up after this long."),
    .option("--prefix", "-P", value: "namespace", abstract: "A prefix.", isRepeatable: true),
    .option("--format", value: "format", abstract: "The format.", choices: Format.self),
    .option("--state", value: "state", abstract: "A state."),
    .flag("--verbose", "-v", abstract: "Be verbose.", isRepeatable: true),
    .flag("-q", abstract: "Print nothing."),
    .flag("-dispatch", abstract: "Deliver through a dispatch queue."),
  ])

let runner = CommandRunner(command)

/// Reads every option and argument back, as text and as every value type.
func exercise(_ parsed: ParsedArguments, tokens: [String]) {
  let positional = command.arguments.map(\.name)
  let names = command.options.flatMap(\.names) + positional
  var valueCount = 0
  for name in names {
    _ = parsed.contains(name)
    _ = parsed.value(name)
    let values = parsed.values(name)
    precondition(
      values.allSatisfy { value in tokens.contains { $0.contains(value) } }
        || values == [command.optionIndex(named: name).flatMap { command.options[$0].defaultValue }]
    )
    if positional.contains(name) {
      precondition(values.allSatisfy(tokens.contains))
      valueCount += values.count
    }
    _ = try? parsed.values(name, as: Int.self)
    _ = try? parsed.values(name, as: UInt64.self)
    _ = try? parsed.values(name, as: Double.self)
    _ = try? parsed.values(name, as: Format.self)
    do {
      _ = try parsed.value(name, as: Int32.self)
    } catch {
      precondition(
        error.code == .invalidValue && error.message.utf8.starts(with: "The value '".utf8))
    }
  }
  precondition(valueCount <= tokens.count && parsed.occurrences.count <= tokens.joined().count)
  precondition(parsed.occurrences.allSatisfy { command.options.contains($0.option) })
}

/// Renders an error and checks its shape.
func report(_ error: CommandLineError) {
  let outcome = runner.outcome(for: error)
  if error.isCleanExit {
    precondition(outcome.exitCode == .success && outcome.stream == .standardOutput)
  } else {
    precondition(outcome.exitCode == .validationFailure && outcome.stream == .standardError)
    precondition(outcome.text.utf8.starts(with: "Error: ".utf8) && !error.message.isEmpty)
    precondition(outcome.text.utf8.last == UInt8(ascii: "\n"))
  }
}

/// notifyutil's shape in the ordered syntax: single-dash words, an optional value, two
/// values, a numbered option.
let ordered = CommandDescription(
  name: "notifyutil", usage: "notifyutil [-q] [-z msec] command ...",
  options: [
    .flag("-q", abstract: "quiet mode"),
    .option("-z", value: "msec", abstract: "pause"),
    .option("-p", value: "key", abstract: "post"),
    .option("-s", value: "key", abstract: "set").with { $0.additionalValueNames = ["val"] },
    .option("-#", value: "key", abstract: "watch").with { $0.isNumbered = true },
    OptionDescription(names: ["-signal", "-sig"], valueName: "signal", abstract: "signal").with {
      $0.isValueOptional = true
      $0.section = "commands"
    },
    .flag("-plain", abstract: "plain").with { $0.isHidden = true },
  ],
  syntax: .ordered)

/// A command with two subcommands, one of them ``command``.
let group = CommandDescription(
  name: "app", version: "1.0",
  subcommands: [
    CommandDescription(
      name: "watch", abstract: command.abstract, arguments: command.arguments,
      options: command.options),
    CommandDescription(name: "list", options: [.flag("--json", abstract: "JSON.")]),
  ])

/// Reads the tokens as notifyutil's command line and as a command with subcommands.
func scan(_ tokens: [String]) {
  do {
    let parsed = try ordered.parse(tokens)
    var consumed = 0
    for occurrence in parsed.occurrences {
      precondition(occurrence.values.count <= 1 + occurrence.option.additionalValueNames.count)
      consumed += 1 + occurrence.values.count
      _ = try? occurrence.value(as: Int32.self)
      _ = try? occurrence.value(at: 1, as: UInt64.self)
      if occurrence.option.isNumbered {
        precondition(Int(occurrence.spelling.dropFirst()) != nil)
      }
    }
    precondition(consumed == tokens.count)
  } catch {
    let outcome = CommandRunner(ordered).outcome(for: error)
    precondition(error.isCleanExit || outcome.exitCode == .validationFailure)
    precondition(!error.isCleanExit || outcome.text.utf8.starts(with: "usage: ".utf8))
  }
  let groupRunner = CommandRunner(group)
  do {
    let parsed = try group.parse(tokens)
    precondition(["watch", "list"].contains(parsed.command.name))
    precondition(parsed.command.qualifiedName == "app " + parsed.command.name)
  } catch {
    let outcome = groupRunner.outcome(for: error)
    precondition(group.subcommand(at: error.commandPath) != nil)
    if !error.isCleanExit {
      precondition(outcome.exitCode == .validationFailure)
      precondition(outcome.text.utf8.starts(with: "Error: ".utf8))
    }
  }
}

/// Describes raw bytes as the not-UTF-8 error does: valid text kept, other bytes as `\xNN`.
func describe(_ bytes: UnsafeBufferPointer<UInt8>) {
  let message = CommandLineError.invalidEncoding(Array(bytes.prefix(256)), after: nil).message
  precondition(message.utf8.starts(with: "The argument '".utf8))
  precondition(message.utf8.reversed().starts(with: "' is not valid UTF-8".utf8.reversed()))
}

/// Wraps one token and checks that only whitespace changed.
func wrap(_ text: String, seed: UInt8) {
  let columns = Int(seed % 100) + 1
  let indent = Int(seed / 100) * 13 % columns
  let wrapped = CommandDescription.wrap(text, columns: columns, indent: indent)
  let visible = { (text: String) in text.unicodeScalars.filter { !$0.properties.isWhitespace } }
  precondition(visible(wrapped).elementsEqual(visible(text)))
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = UnsafeBufferPointer(start: data, count: size)
  let tokens = bytes.split(separator: 0, omittingEmptySubsequences: false).map {
    String(decoding: $0, as: UTF8.self)
  }
  do {
    exercise(try command.parse(tokens), tokens: tokens)
  } catch {
    report(error)
  }
  scan(tokens)
  describe(bytes)
  if let first = tokens.first { wrap(first, seed: bytes.first ?? 0) }
  return 0
}
