// notifybus-bench: every NotifyBus benchmark against its baseline, in one run.
//
//   swift run -c release notifybus-bench [--quick] [--repeat N] [SUITE...]
//
// Absolute figures on a shared or virtual machine vary from run to run; the ratio
// between NotifyBus and its baseline, measured in the same run, is what to compare.
// `--repeat N` runs the selected suites N times over and reports each row's median
// ratio with the range of the runs' ratios.

import CommandLineSupport
import NotifyToolsCore

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

let suites: [any BenchmarkSuite.Type] = [
  DBusSuite.self, MessageCodingSuite.self, NotifySuite.self, CLibrarySuite.self,
  ItemCodecSuite.self, SpoolSuite.self,
  CommandLineSuite.self,
  HandoffSuite.self, ActivationSuite.self,
  NotifydSuite.self, StuckReceiverSuite.self, BridgeSuite.self, ScaleSuite.self,
]

let stopSignals = Interruption.endChildrenOnStop()

if CommandLine.arguments.dropFirst().first == "--child" {
  exit(await Children.run(Array(CommandLine.arguments.dropFirst(2))))
}

let command = CommandDescription(
  name: "notifybus-bench",
  abstract: "Run every NotifyBus benchmark against its baseline.",
  discussion: """
    Each row compares NotifyBus with a baseline measured in the same run (libdbus in C, \
    getopt_long, SQLite, ...) and prints the ratio with met or MISSED against its target.
    """,
  version: notifyBusVersion,
  arguments: [
    ArgumentDescription(
      "suite",
      abstract:
        "A suite to run (\(suites.map { $0.name }.joined(separator: ", "))); all by default.",
      isOptional: true, isRepeating: true)
  ],
  options: [
    .flag("--quick", abstract: "Run a tenth of the iterations, for a smoke test."),
    .count(
      "--repeat",
      abstract: """
        Run the selected suites N times over (each still alternating NotifyBus and its \
        baseline) and report each row's median ratio, with the lowest and highest, judging \
        the target on the median. 1 by default.
        """),
  ])

await CommandRunner(command).asyncMain { arguments in
  let scale = arguments.contains("--quick") ? 0.1 : 1.0
  let selected = arguments.values("suite")
  for name in selected where !suites.contains(where: { $0.name == name }) {
    throw CommandLineError.validation(
      "Unknown suite '\(name)'; the suites are \(suites.map { $0.name }.joined(separator: ", ")).")
  }
  let repeats = try arguments.value("--repeat", as: Count.self)?.value ?? 1
  var runs: [[BenchmarkRow]] = []
  var failed = false
  for run in 1...repeats {
    var rows: [BenchmarkRow] = []
    for suite in suites where selected.isEmpty || selected.contains(suite.name) {
      try? StandardError.writeLine(
        "running \(suite.name)" + (repeats > 1 ? " (run \(run) of \(repeats))" : "") + "...")
      do {
        rows += try await suite.run(scale: scale)
      } catch {
        try? StandardError.writeLine("Error: suite \(suite.name) failed: \(error)")
        failed = true
      }
    }
    runs.append(rows)
  }
  CLibrarySuite.finish()
  try StandardOutput.writeLine(Report.table(runs))
  if failed { throw ExitCode.failure }
}
