import CommandLineSupport
import Testing

struct ValueConversionTests {
  /// The message for `value` given to `--count` and read as `type`.
  func message<Value: CommandLineValue>(_ value: String, as type: Value.Type) throws -> String {
    let parsed = try Fixtures.watch.parse(["--count", value, "a"])
    let error = try #require(throws: CommandLineError.self) {
      try parsed.value("--count", as: type)
    }
    #expect(error.code == .invalidValue)
    #expect(error.help == "--count <count>  Exit after this many deliveries.")
    return error.message
  }

  @Test func readsIntegers() throws {
    let parsed = try Fixtures.watch.parse(["--count", "42", "--state=-7", "--timeout=+3", "a"])
    #expect(try parsed.value("--count", as: Int.self) == 42)
    #expect(try parsed.value("--state", as: Int64.self) == -7)
    #expect(try parsed.value("--timeout", as: UInt32.self) == 3)
    #expect(try parsed.value("--prefix", as: Int.self) == nil)
  }

  @Test(arguments: [
    ("abc", "not an integer"), ("12abc", "not an integer"), ("", "an integer is needed"),
    ("1.5", "not an integer"), (" 1", "not an integer"), ("٣", "not an integer"),
    ("9223372036854775808", "out of range (-9223372036854775808...9223372036854775807)"),
    ("-9223372036854775809", "out of range (-9223372036854775808...9223372036854775807)"),
  ])
  func rejectsMalformedIntegers(value: String, reason: String) throws {
    #expect(
      try message(value, as: Int.self)
        == "The value '\(value)' is invalid for '--count <count>': \(reason)")
  }

  @Test func rejectsNegativeAndOverflowingUnsignedIntegers() throws {
    #expect(
      try message("-1", as: UInt64.self)
        == "The value '-1' is invalid for '--count <count>': must not be negative")
    #expect(
      try message("18446744073709551616", as: UInt64.self)
        == "The value '18446744073709551616' is invalid for '--count <count>': out of range (0...18446744073709551615)"
    )
    let parsed = try Fixtures.watch.parse(["--count", "18446744073709551615", "a"])
    #expect(try parsed.value("--count", as: UInt64.self) == .max)
  }

  @Test func readsAndRejectsDoubles() throws {
    let parsed = try Fixtures.watch.parse(["-t", "2.5", "--state", "1e-3", "a"])
    #expect(try parsed.value("-t", as: Double.self) == 2.5)
    #expect(try parsed.value("--state", as: Double.self) == 0.001)
    for (value, reason) in [
      ("nan", "not a number"), ("inf", "not a number"), ("0x10", "not a number"),
      ("", "a number is needed"),
      ("1e999", "out of range"), ("1.2.3", "not a number"),
    ] {
      #expect(
        try message(value, as: Double.self)
          == "The value '\(value)' is invalid for '--count <count>': \(reason)")
    }
  }

  @Test func readsEnumeratedChoices() throws {
    let parsed = try Fixtures.watch.parse(["--format", "json", "a"])
    #expect(try parsed.value("--format", as: Fixtures.Format.self) == .json)
    #expect(
      try message("xml", as: Fixtures.Format.self)
        == "The value 'xml' is invalid for '--count <count>'. Please provide one of 'text', 'json' or 'verbose'."
    )
  }

  @Test func namesTheSpellingTheUserTyped() throws {
    let parsed = try Fixtures.watch.parse(["-c", "x", "a"])
    let error = try #require(throws: CommandLineError.self) {
      try parsed.value("--count", as: Int.self)
    }
    #expect(error.message == "The value 'x' is invalid for '-c <count>': not an integer")
    #expect(error.help == "-c <count>  Exit after this many deliveries.")
  }

  @Test func namesTheFirstBadValueOfAList() throws {
    let parsed = try Fixtures.watch.parse([
      "--prefix", "1", "--prefix", "two", "--prefix", "x", "a",
    ])
    let error = try #require(throws: CommandLineError.self) {
      try parsed.values("--prefix", as: Int.self)
    }
    #expect(
      error.message == "The value 'two' is invalid for '--prefix <namespace>': not an integer")
  }

  @Test func convertsPositionalArguments() throws {
    let parsed = try Fixtures.watch.parse(["1", "2", "x"])
    let error = try #require(throws: CommandLineError.self) {
      try parsed.values("name", as: UInt.self)
    }
    #expect(error.message == "The value 'x' is invalid for '<name>': not an integer")
    #expect(error.help == "<name>  A notification name to watch.")
    #expect(try Fixtures.watch.parse(["7"]).values("name", as: UInt.self) == [7])
  }

  @Test func listsTwoChoicesWithAnd() throws {
    let command = CommandDescription(
      name: "tool",
      options: [.option("--bus", value: "bus", abstract: "", choices: ["session", "system"])])
    let error = try #require(throws: CommandLineError.self) { try command.parse(["--bus=user"]) }
    #expect(
      error.message
        == "The value 'user' is invalid for '--bus <bus>'. Please provide one of 'session' and 'system'."
    )
  }

  @Test func listsManyChoicesOnePerLine() throws {
    let command = CommandDescription(
      name: "tool",
      options: [
        .option("--level", value: "level", abstract: "", choices: ["a", "b", "c", "d", "e", "f"])
      ])
    let error = try #require(throws: CommandLineError.self) { try command.parse(["--level", "z"]) }
    #expect(
      error.message == """
        The value 'z' is invalid for '--level <level>'. Please provide one of the following:
          - a
          - b
          - c
          - d
          - e
          - f
        """)
    #expect(error.help == nil)
  }
}
