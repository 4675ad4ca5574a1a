import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The `cli-demo` executable built next to the tests, run as a real process.
struct DemoProcess {
  /// The built `cli-demo`, next to the test binary or in `.build/debug`.
  static var executable: URL {
    let besideTests = URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent()
      .appending(path: "cli-demo")
    if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
    return URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent().appending(path: ".build/debug/cli-demo")
  }

  /// What a finished run printed and how it ended.
  struct Result {
    var status: Int32
    var reason: Process.TerminationReason
    var output: String
    var errors: String
  }

  /// Runs `cli-demo` to completion; kills it with `SIGKILL` if it is still running after
  /// `limit` seconds, so a hung child never hangs the tests.
  static func run(_ arguments: [String], limit: Double = 30) throws -> Result {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let watchdog = DispatchWorkItem { kill(process.processIdentifier, SIGKILL) }
    DispatchQueue.global().asyncAfter(deadline: .now() + limit, execute: watchdog)
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    watchdog.cancel()
    return Result(
      status: process.terminationStatus, reason: process.terminationReason,
      output: String(decoding: outputData, as: UTF8.self),
      errors: String(decoding: errorData, as: UTF8.self))
  }
}
