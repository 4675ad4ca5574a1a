import CCommandLineBaseline
import CommandLineSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// CommandLineSupport against C: parsing a `notify-watch` command line against glibc's
/// `getopt_long`, and writing one line per event against stdio with `fflush` after each line.
enum CommandLineSuite: BenchmarkSuite {
  static let name = "cli"

  /// A `notify-watch`-shaped command line: options in every form and three names.
  static let arguments = [
    "--count", "10", "--timeout=2.5", "-v", "--prefix", "a.", "--prefix=b.", "-q", "--json",
    "group.example.saved", "--", "-odd", "name",
  ]

  static let command = CommandDescription(
    name: "notify-watch",
    arguments: [ArgumentDescription("name", abstract: "", isRepeating: true)],
    options: [
      .option("--count", "-c", value: "count", abstract: ""),
      .option("--timeout", "-t", value: "seconds", abstract: ""),
      .option("--prefix", value: "namespace", abstract: "", isRepeatable: true),
      .flag("--json", abstract: ""),
      .flag("--verbose", "-v", abstract: ""),
      .flag("-q", abstract: ""),
    ])

  static func run(scale: Double) async throws -> [BenchmarkRow] {
    let parses = max(1_000, Int(200_000 * scale))
    let lines = max(1_000, Int(200_000 * scale))
    return [
      BenchmarkRow(
        name: "parse 13-argument command line", unit: "ns", subject: try swiftParse(parses),
        baselineName: "glibc getopt_long", baseline: getoptParse(parses), higherIsBetter: false),
      BenchmarkRow(
        name: "unbuffered line to /dev/null", unit: "ns",
        subject: try toDevNull { try swiftLines(lines) },
        baselineName: "C fputs + fflush",
        baseline: try toDevNull { ccl_stdio_lines_ns(CInt(lines)) },
        higherIsBetter: false),
    ]
  }

  /// Nanoseconds per parse with CommandLineSupport, reading every value back.
  static func swiftParse(_ count: Int) throws -> Double {
    var checksum = 0
    let elapsed = try ContinuousClock().measure {
      for _ in 0..<count {
        let parsed = try command.parse(arguments)
        checksum &+= parsed.values("--prefix").count + parsed.values("name").count
        checksum &+= parsed.count("-v") + (parsed.value("--count")?.utf8.count ?? 0)
      }
    }
    precondition(checksum == count * 8)
    return nanoseconds(elapsed) / Double(count)
  }

  /// Nanoseconds per parse with `getopt_long`, in C, keeping each `optarg`.
  static func getoptParse(_ count: Int) -> Double {
    let strings = (["notify-watch"] + arguments).map { strdup($0) }
    defer { for string in strings { free(string) } }
    var checksum = 0
    let nanoseconds = ccl_getopt_long_ns(CInt(count), CInt(strings.count), strings, &checksum)
    precondition(checksum == count * 8)
    return nanoseconds
  }

  /// Nanoseconds per line written with `StandardOutput.writeLine`.
  static func swiftLines(_ count: Int) throws -> Double {
    let elapsed = try ContinuousClock().measure {
      for index in 0..<count { try StandardOutput.writeLine("group.example.saved \(index)") }
    }
    return nanoseconds(elapsed) / Double(count)
  }

  /// Runs `body` with standard output sent to `/dev/null`.
  static func toDevNull(_ body: () throws -> Double) throws -> Double {
    fflush(nil)
    let saved = dup(STDOUT_FILENO)
    let null = open("/dev/null", O_WRONLY)
    precondition(saved >= 0 && null >= 0)
    dup2(null, STDOUT_FILENO)
    defer {
      fflush(nil)
      dup2(saved, STDOUT_FILENO)
      close(saved)
      close(null)
    }
    return try body()
  }

  static func nanoseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
  }
}
