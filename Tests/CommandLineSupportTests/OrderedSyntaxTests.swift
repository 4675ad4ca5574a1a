import CommandLineSupport
import Testing

/// Scans notifyutil's command line with ``ArgumentTokens``, the way the notifyutil tool will.
struct ArgumentTokensTests {
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

  /// A notifyutil command line reduced to its steps, as the real tool will read it.
  func steps(_ arguments: [String]) throws(CommandLineError) -> [Step] {
    var tokens = ArgumentTokens(arguments)
    var steps: [Step] = []
    while let token = tokens.next() {
      switch token {
      case "-q": steps.append(.quiet)
      case "-v": steps.append(.verbose)
      case "-z":
        steps.append(.delay(try tokens.nextValue(for: "-z", valueName: "msec", as: Int.self)))
      case "-p": steps.append(.post(try tokens.nextValue(for: "-p", valueName: "key")))
      case "-w": steps.append(.watch(try tokens.nextValue(for: "-w", valueName: "key"), count: nil))
      case "-g": steps.append(.get(try tokens.nextValue(for: "-g", valueName: "key")))
      case "-s":
        let key = try tokens.nextValue(for: "-s", valueName: "key")
        steps.append(
          .set(key, try tokens.nextValue(for: "-s", valueName: "value", as: UInt64.self)))
      case "-port", "-file", "-check", "-plain", "-dispatch":
        steps.append(.mode(String(token.dropFirst()), signal: nil))
      case "-signal", "-sig":
        let number = try tokens.nextOptionalValue(for: token, valueName: "signal", as: Int32.self)
        steps.append(.mode("signal", signal: number ?? 1))
      default:
        guard let count = try ArgumentTokens.numericOption(token) else {
          throw token.hasPrefix("-")
            ? ArgumentTokens.unknownOption(token) : ArgumentTokens.unexpectedArgument(token)
        }
        steps.append(.watch(try tokens.nextValue(for: token, valueName: "key"), count: count))
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
      (["-s", "k"], .missingValue, "Missing value for '-s <value>'"),
      (
        ["-z", "soon"], .invalidValue, "The value 'soon' is invalid for '-z <msec>': not an integer"
      ),
      (["-z", ""], .invalidValue, "The value '' is invalid for '-z <msec>': an integer is needed"),
      (
        ["-s", "k", "-1"], .invalidValue,
        "The value '-1' is invalid for '-s <value>': must not be negative"
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

  @Test func peeksWithoutConsuming() {
    var tokens = ArgumentTokens(["-a", "b"])
    #expect(tokens.peek() == "-a" && tokens.position == 0)
    #expect(tokens.next() == "-a")
    #expect(tokens.remaining == ["b"])
    #expect(tokens.next() == "b" && tokens.isAtEnd)
    #expect(tokens.next() == nil && tokens.peek() == nil)
  }

  @Test func recognisesOnlyDigitsAsANumericOption() throws {
    #expect(try ArgumentTokens.numericOption("-1") == 1)
    #expect(try ArgumentTokens.numericOption("-007") == 7)
    for token in ["-", "1", "-a1", "-1.5", "--1", "-١"] {
      #expect(try ArgumentTokens.numericOption(token) == nil, "\(token)")
    }
  }
}
