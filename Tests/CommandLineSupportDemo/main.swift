// A small tool built on CommandLineSupport that the tests run as a real process: it proves
// that lines reach a pipe at once, that exit codes reach the shell and that the executable
// does not link Foundation.

import CommandLineSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The failure `--fail` reports, to check the runtime-failure path.
struct DemoFailure: Error, CustomStringConvertible {
  var description: String { "The demo failed on purpose." }
}

let command = CommandDescription(
  name: "cli-demo",
  abstract: "Print numbered lines, then wait or fail as asked.",
  version: "1.0.0",
  arguments: [
    ArgumentDescription("word", abstract: "Words to print.", isOptional: true, isRepeating: true)
  ],
  options: [
    .option("--lines", "-n", value: "lines", abstract: "How many lines to print.", default: "1"),
    .flag("--hold", abstract: "Wait for a signal after printing."),
    .flag("--fail", abstract: "Fail with a runtime error after printing."),
    .option("--exit-code", value: "code", abstract: "Exit silently with this code after printing."),
  ],
  exitStatuses: [.init(ExitCode(3), "Chosen with --exit-code 3.")])

CommandRunner(command).main { arguments in
  let lines = try arguments.value("--lines", as: UInt.self) ?? 1
  let words = arguments.values("word").joined(separator: " ")
  for number in 0..<lines {
    try StandardOutput.writeLine(words.isEmpty ? "line \(number + 1)" : "\(number + 1) \(words)")
  }
  if arguments.contains("--fail") { throw DemoFailure() }
  if let code = try arguments.value("--exit-code", as: Int32.self) { throw ExitCode(code) }
  if arguments.contains("--hold") {
    while true { pause() }
  }
}
