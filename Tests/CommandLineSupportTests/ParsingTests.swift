import CommandLineSupport
import Testing

struct ParsingTests {
  let watch = Fixtures.watch

  /// Parses `arguments` against `notify-watch`, expecting success.
  func parse(_ arguments: String...) throws -> ParsedArguments {
    try watch.parse(arguments)
  }

  /// The error `arguments` produce against `command`.
  func error(
    _ arguments: [String], _ command: CommandDescription = Fixtures.watch
  ) throws -> CommandLineError {
    try #require(throws: CommandLineError.self) { try command.parse(arguments) }
  }

  @Test func readsOptionValuesInEveryForm() throws {
    for arguments in [
      ["--count", "3", "a"], ["--count=3", "a"], ["-c", "3", "a"], ["-c3", "a"], ["a", "-c", "3"],
    ] {
      let parsed = try watch.parse(arguments)
      #expect(parsed.value("--count") == "3", "\(arguments)")
      #expect(parsed.value("-c") == "3", "\(arguments)")
      #expect(parsed.values("name") == ["a"], "\(arguments)")
    }
  }

  @Test func keepsAnEmptyOrEqualsSignValue() throws {
    #expect(try parse("--state=", "a").value("--state") == "")
    #expect(try parse("--state=a=b", "a").value("--state") == "a=b")
    #expect(try parse("--state", "", "a").value("--state") == "")
  }

  @Test func combinesShortFlags() throws {
    let parsed = try parse("-vq", "-vc", "5", "a")
    #expect(parsed.count("--verbose") == 2)
    #expect(parsed.contains("-q"))
    #expect(parsed.value("--count") == "5")
    #expect(parsed.occurrences.map(\.spelling) == ["-v", "-q", "-v", "-c"])
  }

  @Test func matchesSingleDashWordsWhole() throws {
    let parsed = try parse("-dispatch", "a")
    #expect(parsed.contains("-dispatch"))
    #expect(!parsed.contains("-q"))
  }

  @Test func treatsEverythingAfterTheTerminatorAsPositional() throws {
    let parsed = try parse("a", "--", "--count", "-v", "--help", "--")
    #expect(parsed.values("name") == ["a", "--count", "-v", "--help", "--"])
    #expect(!parsed.contains("--count"))
    #expect(!parsed.contains("--verbose"))
  }

  @Test func treatsALoneDashAndNegativeNumbersAsValues() throws {
    let parsed = try parse("-", "--state", "-5", "-1", "-.5")
    #expect(parsed.values("name") == ["-", "-1", "-.5"])
    #expect(parsed.value("--state") == "-5")
  }

  @Test func keepsTheLastValueAndAllOfARepeatedOption() throws {
    let parsed = try parse("--prefix", "a.", "--count", "1", "--prefix=b.", "-c", "2", "x")
    #expect(parsed.values("--prefix") == ["a.", "b."])
    #expect(parsed.value("--prefix") == "b.")
    #expect(parsed.value("--count") == "2")
    #expect(parsed.count("-c") == 2)
  }

  @Test func fallsBackToDefaults() throws {
    let parsed = try parse("a")
    #expect(parsed.value("--bus") == "session")
    #expect(parsed.values("--bus") == ["session"])
    #expect(!parsed.contains("--bus"))
    #expect(parsed.value("--count") == nil)
    #expect(parsed.values("--prefix") == [])
    #expect(try parsed.value("--format", as: Fixtures.Format.self) == .text)
  }

  @Test func keepsUnicodeArgumentsIntact() throws {
    let parsed = try parse("--state=état", "名前.通知", "👍🏽", "--prefix", "é")
    #expect(parsed.values("name") == ["名前.通知", "👍🏽"])
    #expect(parsed.value("--state") == "état")
    #expect(parsed.value("--prefix") == "é")
    #expect(try error(["-é"]).message == "Unknown option '-é'")
    #expect(try error(["--naïve"]).message == "Unknown option '--naïve'")
  }

  @Test func asksForHelpAnywhereBeforeTheTerminator() throws {
    for arguments in [["--help"], ["-h"], ["a", "--bogus", "-h"], ["--count", "--help"], ["-vh"]] {
      #expect(try error(arguments) == .helpRequested, "\(arguments)")
    }
    #expect(try error(["--version", "--unknown"]) == .versionRequested)
    #expect(try parse("--", "-h", "--version").values("name") == ["-h", "--version"])
  }

  @Test func rejectsUnknownOptions() throws {
    #expect(try error(["--zzzzzzzz"]).message == "Unknown option '--zzzzzzzz'")
    #expect(try error(["--bogus"]).message == "Unknown option '--bogus'. Did you mean '--bus'?")
    #expect(try error(["-help"]).message == "Unknown option '-help'. Did you mean '--help'?")
    #expect(
      try error(["--cuont", "3"]).message == "Unknown option '--cuont'. Did you mean '--count'?")
    #expect(
      try error(["-count", "3"]).message == "Unknown option '-count'. Did you mean '--count'?")
    #expect(try error(["-x"]).message == "Unknown option '-x'")
    #expect(try error(["-vx"]).message == "Unknown option '-x'")
    #expect(
      try error(["--version"], Fixtures.repeatCommand).message == "Unknown option '--version'")
    #expect(try error(["--bogus"]).code == .unknownOption)
  }

  @Test func rejectsMissingValues() throws {
    let atEnd = try error(["a", "--count"])
    #expect(atEnd.code == .missingValue)
    #expect(atEnd.message == "Missing value for '--count <count>'")
    #expect(atEnd.help == "--count <count>  Exit after this many deliveries.")
    #expect(try error(["-c"]).message == "Missing value for '-c <count>'")
    #expect(
      try error(["--count", "--timeout", "3"]).message == "Missing value for '--count <count>'")
    #expect(try error(["--count", "--"]).message == "Missing value for '--count <count>'")
  }

  @Test func rejectsAValueForAFlag() throws {
    let error = try error(["--verbose=yes"])
    #expect(error.code == .unexpectedValue)
    #expect(
      error.message == "The option '--verbose' does not take any value, but 'yes' was specified.")
    #expect(
      try self.error(["--help=x"]).message
        == "The option '--help' does not take any value, but 'x' was specified.")
  }

  @Test func rejectsAValueOutsideTheChoices() throws {
    let error = try error(["--format", "xml", "a"])
    #expect(error.code == .invalidValue)
    #expect(
      error.message
        == "The value 'xml' is invalid for '--format <format>'. Please provide one of 'text', 'json' or 'verbose'."
    )
    #expect(error.help == "--format <format>  The line format.")
  }

  @Test func rejectsMissingArguments() throws {
    let error = try error(["--count", "1"])
    #expect(error.code == .missingArgument)
    #expect(error.message == "Missing expected argument '<name> ...'")
    #expect(error.help == "<name>  A notification name to watch.")
    #expect(!error.showsFullHelp)
    let empty = try self.error([])
    #expect(empty.showsFullHelp)
    #expect(empty.help == nil)
  }

  @Test func rejectsExtraArguments() throws {
    #expect(
      try error(["hello", "extra"], Fixtures.repeatCommand).message == "Unexpected argument 'extra'"
    )
    #expect(
      try error(["hello", "x", "y"], Fixtures.repeatCommand).message
        == "2 unexpected arguments: 'x', 'y'")
    #expect(try error(["hello", "x"], Fixtures.repeatCommand).code == .unexpectedArgument)
  }

  @Test func fillsPositionalArgumentsInOrder() throws {
    let command = CommandDescription(
      name: "copy",
      arguments: [
        ArgumentDescription("source", abstract: ""),
        ArgumentDescription("target", abstract: "", isOptional: true),
        ArgumentDescription("extra", abstract: "", isOptional: true, isRepeating: true),
      ])
    let one = try command.parse(["a"])
    #expect(one.value("source") == "a" && one.value("target") == nil && !one.contains("extra"))
    let many = try command.parse(["a", "b", "c", "d"])
    #expect(many.value("target") == "b")
    #expect(many.values("extra") == ["c", "d"])
    #expect(many.count("extra") == 2)
  }
}
