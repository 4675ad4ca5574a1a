package import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The package's built executables, found beside the test bundle.
package enum Products {
  /// The build directory that holds the executables and the test bundle.
  package static var directory: String {
    // The test runner is `<build>/NotifyBusPackageTests.xctest` (an executable on Linux),
    // or a helper inside it; the products sit in `<build>`.
    var components = CommandLine.arguments[0].split(
      separator: "/", omittingEmptySubsequences: false)
    if let bundle = components.firstIndex(where: { $0.hasSuffix(".xctest") }) {
      components = Array(components[..<bundle])
    } else {
      components.removeLast()
    }
    return components.joined(separator: "/")
  }

  /// The path of the executable `name`.
  package static func path(_ name: String) -> String { directory + "/" + name }

  /// What a finished command did.
  package struct Result: Sendable, CustomStringConvertible {
    /// How it ended; `nil` when it was killed for running past its time.
    package var termination: Subprocess.Termination?
    /// Its standard output.
    package var output: String
    /// Its standard error.
    package var error: String

    /// The exit status, or -1 when it did not exit normally.
    package var status: CInt {
      if case .exited(let code)? = termination { return code }
      return -1
    }

    package var description: String {
      "\(termination.map { "\($0)" } ?? "timed out")\nstdout: \(output)\nstderr: \(error)"
    }
  }

  /// Runs the executable `name` and waits for it, killing it with `SIGKILL` after
  /// `timeout` seconds.
  ///
  /// - Parameter umask: The file mode creation mask to run it under (through `sh`), or
  ///   `nil` for this process's.
  package static func run(
    _ name: String, _ arguments: [String], environment: [String: String] = [:],
    timeout: Int = 20, umask: UInt32? = nil
  ) throws -> Result {
    try runCommand(
      path(name), arguments, environment: environment, timeout: timeout, umask: umask)
  }

  /// Runs any command, as ``run(_:_:environment:timeout:umask:)`` does.
  package static func runCommand(
    _ command: String, _ arguments: [String], environment: [String: String] = [:],
    timeout: Int = 20, umask: UInt32? = nil
  ) throws -> Result {
    var merged = currentEnvironment()
    for (key, value) in environment { merged[key] = value }
    let (program, words) = underUmask(umask, command, arguments)
    let process = try Subprocess.spawn(
      program, arguments: words, environment: merged, captureOutput: true, captureError: true)
    let (output, error) = process.readToEnd(milliseconds: timeout * 1000)
    var termination = process.wait(milliseconds: 1000)
    if termination == nil {
      process.kill(SIGKILL)
      process.wait()
      termination = nil
    }
    return Result(termination: termination, output: output, error: error)
  }

  /// The program and arguments that run `command` under `mask`: `sh -c 'umask …; exec …'`.
  package static func underUmask(_ mask: UInt32?, _ command: String, _ arguments: [String])
    -> (program: String, arguments: [String])
  {
    guard let mask else { return (command, arguments) }
    let script = "umask \(String(mask, radix: 8)) && exec \"$0\" \"$@\""
    return ("/bin/sh", ["-c", script, command] + arguments)
  }

  /// This process's environment as a dictionary.
  package static func currentEnvironment() -> [String: String] {
    var result: [String: String] = [:]
    var pointer = environ
    while let entry = pointer.pointee {
      let text = String(cString: entry)
      if let equals = text.firstIndex(of: "=") {
        result[String(text[..<equals])] = String(text[text.index(after: equals)...])
      }
      pointer += 1
    }
    return result
  }
}
