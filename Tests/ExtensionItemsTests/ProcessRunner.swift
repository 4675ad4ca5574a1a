import Foundation

/// Runs a real process with a bounded wait; a process that overruns is killed with SIGKILL.
enum ProcessRunner {
  struct Result {
    var status: Int32
    var standardOutput: Data
    var standardError: String
  }

  struct Timeout: Error, CustomStringConvertible {
    var command: String
    var description: String { "\(command) did not finish in time and was killed" }
  }

  static func run(_ executable: String, _ arguments: [String], timeout: Double = 30) throws
    -> Result
  {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
      "ExtensionItemsTests-process-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let outURL = directory.appendingPathComponent("stdout")
    let errURL = directory.appendingPathComponent("stderr")
    try Data().write(to: outURL)
    try Data().write(to: errURL)
    let out = try FileHandle(forWritingTo: outURL)
    let err = try FileHandle(forWritingTo: errURL)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(5_000) }
    if process.isRunning {
      kill(process.processIdentifier, SIGKILL)
      process.waitUntilExit()
      throw Timeout(command: ([executable] + arguments).joined(separator: " "))
    }
    process.waitUntilExit()
    try out.close()
    try err.close()
    return Result(
      status: process.terminationStatus, standardOutput: try Data(contentsOf: outURL),
      standardError: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
  }
}
