import CommandLineSupport
import Testing

/// Reads notifyutil's command line with the ordered syntax, the way the notifyutil tool does.
struct OrderedSyntaxTests {
  /// One step of a notifyutil command line, in the order it runs.
  enum Step: Equatable {
    case quiet
    case verbose
    case delay(Int)
    case post(String)
    case watch(String, count: Int?)
    case get(String)
    case set(String, UInt64)
    case mode(String, signal: Int32?)
  }

  static let command = CommandDescription(
    name: "notifyutil",
    usage: "notifyutil [-q] [-v] [-z msec] command ...",
    options: [
      .flag("-q", abstract: "quiet mode"),
      .flag("-v", abstract: "verbose"),
      .option("-z", value: "msec", abstract: ""),
      .option("-p", value: "key", abstract: ""),
      .option("-w", value: "key", abstract: ""),
      .option("-g", value: "key", abstract: ""),
      .option("-s", value: "key", abstract: "").with { $0.additionalValueNames = ["value"] },
      .option("-#", value: "key", abstract: "").with { $0.isNumbered = true },
      .flag("-port", abstract: ""), .flag("-file", abstract: ""), .flag("-check", abstract: ""),
      .flag("-plain", abstract: ""), .flag("-dispatch", abstract: ""),
      OptionDescription(names: ["-signal", "-sig"], valueName: "signal", abstract: "").with {
        $0.isValueOptional = true
      },
    ],
    syntax: .ordered)

  /// A notifyutil command line reduced to its steps, as the real tool reads it.
  func steps(_ arguments: [String]) throws(CommandLineError) -> [Step] {
    var steps: [Step] = []
    for occurrence in try Self.command.parse(arguments).occurrences {
      switch occurrence.option.names[0] {
      case "-q": steps.append(.quiet)
      case "-v": steps.append(.verbose)
      case "-z": steps.append(.delay(try occurrence.value(as: Int.self)!))
      case "-p": steps.append(.post(occurrence.values[0]))
      case "-w": steps.append(.watch(occurrence.values[0], count: nil))
      case "-g": steps.append(.get(occurrence.values[0]))
      case "-s":
        steps.append(.set(occurrence.values[0], try occurrence.value(at: 1, as: UInt64.self)!))
      case "-#":
        steps.append(.watch(occurrence.values[0], count: Int(occurrence.spelling.dropFirst())))
      case "-signal":
        steps.append(.mode("signal", signal: try occurrence.value(as: Int32.self) ?? 1))
      default: steps.append(.mode(String(occurrence.spelling.dropFirst()), signal: nil))
      }
    }
    return steps
  }

  @Test func runsCommandsLeftToRight() throws {
    #expect(
      try steps(["-v", "-q", "-z", "50", "-signal", "-1", "a", "-p", "a", "-g", "a"]) == [
        .verbose, .quiet, .delay(50), .mode("signal", signal: 1), .watch("a", count: 1), .post("a"),
        .get("a"),
      ])
    #expect(
      try steps([
        "-sig", "15", "-w", "b", "-dispatch", "-25", "c", "-s", "c", "18446744073709551615",
      ]) == [
        .mode("signal", signal: 15), .watch("b", count: nil), .mode("dispatch", signal: nil),
        .watch("c", count: 25), .set("c", .max),
      ])
    #expect(try steps(["-signal"]) == [.mode("signal", signal: 1)])
    #expect(try steps([]) == [])
  }

  @Test func takesAnyNextTokenAsAValue() throws {
    #expect(
      try steps(["-p", "-x", "-p", "", "-p", "名前"]) == [.post("-x"), .post(""), .post("名前")])
  }

  @Test func namesTheOffendingToken() {
    let cases: [([String], CommandLineError.Code, String)] = [
      (["-p"], .missingValue, "Missing value for '-p <key>'"),
      (["-s", "k"], .missingValue, "Missing value for '-s <key> <value>'"),
      (
        ["-z", "soon"], .invalidValue, "The value 'soon' is invalid for '-z <msec>': not an integer"
      ),
      (["-z", ""], .invalidValue, "The value '' is invalid for '-z <msec>': an integer is needed"),
      (
        ["-s", "k", "-1"], .invalidValue,
        "The value '-1' is invalid for '-s <key> <value>': must not be negative"
      ),
      (
        ["-signal", "HUP"], .invalidValue,
        "The value 'HUP' is invalid for '-signal [<signal>]': not an integer"
      ),
      (
        ["-99999999999999999999", "k"], .invalidValue,
        "The value '99999999999999999999' is invalid for '-<count>': out of range "
          + "(-9223372036854775808...9223372036854775807)"
      ),
      (["-x"], .unknownOption, "Unknown option '-x'"),
      (["-1x", "k"], .unknownOption, "Unknown option '-1x'"),
      (["stray"], .unexpectedArgument, "Unexpected argument 'stray'"),
    ]
    for (arguments, code, message) in cases {
      #expect(throws: CommandLineError.self, "\(arguments)") { try steps(arguments) }
      do {
        _ = try steps(arguments)
      } catch {
        #expect(error.code == code, "\(arguments)")
        #expect(error.message == message, "\(arguments)")
      }
    }
  }

  @Test func recognisesOnlyDigitsAsANumberedOption() throws {
    #expect(try steps(["-007", "k"]) == [.watch("k", count: 7)])
    for token in ["-a1", "-1.5", "--1", "-١"] {
      #expect(throws: CommandLineError.self, "\(token)") { try steps([token, "k"]) }
    }
  }

  @Test func helpIsDarwinsLayoutOnStandardErrorForDashH() {
    let runner = CommandRunner(Self.command)
    let short = runner.outcome { _ = try Self.command.parse(["-p", "a", "-h"]) }
    #expect(short.stream == .standardError && short.exitCode == .success)
    #expect(short.text.hasPrefix("usage: notifyutil [-q] [-v] [-z msec] command ...\n    -q "))
    #expect(short.text.contains("\n    -s key value   \n"))
    let long = runner.outcome { _ = try Self.command.parse(["--help"]) }
    #expect(long.stream == .standardOutput && long.text == short.text)
  }
}
