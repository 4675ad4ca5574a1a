// notifybus-bench: every NotifyBus benchmark against its baseline, in one run.
//
//   swift run -c release notifybus-bench [--quick] [SUITE...]
//
// Absolute figures on a shared or virtual machine vary from run to run; the ratio
// between NotifyBus and its baseline, measured in the same run, is what to compare.

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

let suites: [any BenchmarkSuite.Type] = [
  DBusSuite.self, NotifySuite.self, CLibrarySuite.self, ItemCodecSuite.self, SpoolSuite.self,
  CommandLineSuite.self,
  HandoffSuite.self,
  NotifydSuite.self, StuckReceiverSuite.self,
]

if CommandLine.arguments.dropFirst().first == "--child" {
  exit(await Children.run(Array(CommandLine.arguments.dropFirst(2))))
}

var scale = 1.0
var selected: [String] = []
for argument in CommandLine.arguments.dropFirst() {
  switch argument {
  case "--quick": scale = 0.1
  case "-h", "--help":
    print("USAGE: notifybus-bench [--quick] [\(suites.map { $0.name }.joined(separator: "|"))...]")
    exit(0)
  default:
    guard suites.contains(where: { $0.name == argument }) else {
      fputs("Error: unknown suite '\(argument)'\n", stderr)
      exit(64)
    }
    selected.append(argument)
  }
}

var rows: [BenchmarkRow] = []
var failed = false
for suite in suites where selected.isEmpty || selected.contains(suite.name) {
  fputs("running \(suite.name)...\n", stderr)
  do {
    rows += try await suite.run(scale: scale)
  } catch {
    fputs("Error: suite \(suite.name) failed: \(error)\n", stderr)
    failed = true
  }
}
print(Report.table(rows))
exit(failed ? 1 : 0)
