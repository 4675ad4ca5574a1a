#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Runs a tool's body and turns its outcome into output and an exit status, as
/// swift-argument-parser does.
///
/// | Outcome | Stream | Text | Exit |
/// |---|---|---|---|
/// | body returns | | | 0 |
/// | `-h`, `--help`, `--version` | stdout | help or version | 0 |
/// | ``CommandLineError`` | stderr | `Error: …`, `Help:  …`, `Usage: …`, `  See '…'` | 64 |
/// | ``ExitCode`` thrown | | nothing | that code |
/// | any other error | stderr | `Error: <description>` | 1 |
///
/// ```swift
/// @main enum NotifyPost {
///   static func main() async {
///     await CommandRunner(command).asyncMain { arguments in
///       for name in arguments.values("name") { try await post(name) }
///     }
///   }
/// }
/// ```
///
/// Tools with irregular syntax, such as notifyutil, scan the arguments themselves:
///
/// ```swift
/// let runner = CommandRunner(command)
/// runner.exit(with: runner.outcome {
///   var tokens = ArgumentTokens(CommandLine.arguments.dropFirst())
///   try NotifyUtil.run(&tokens)
/// })
/// ```
public struct CommandRunner: Sendable {
  /// What to print and which status to exit with.
  public struct Outcome: Hashable, Sendable {
    /// Where ``text`` goes.
    public enum Stream: Hashable, Sendable {
      /// Standard output: help and version.
      case standardOutput
      /// Standard error: every error.
      case standardError
    }

    /// The status to exit with.
    public var exitCode: ExitCode
    /// Where ``text`` goes.
    public var stream: Stream
    /// The exact text to write, ending with a newline; empty when nothing is printed.
    public var text: String

    /// Creates an outcome.
    public init(exitCode: ExitCode, stream: Stream, text: String) {
      self.exitCode = exitCode
      self.stream = stream
      self.text = text
    }

    /// A successful run that printed everything it had to print itself.
    public static let success = Outcome(exitCode: .success, stream: .standardOutput, text: "")
  }

  /// The tool's description, for help, usage and version.
  public var command: CommandDescription

  /// Creates a runner for a tool.
  public init(_ command: CommandDescription) {
    self.command = command
  }

  /// Parses `CommandLine.arguments`, runs `body`, prints the outcome and exits.
  public func main(_ body: (ParsedArguments) throws -> Void) -> Never {
    exit(with: outcome { try body(try command.parse(CommandLine.arguments.dropFirst())) })
  }

  /// Parses `CommandLine.arguments`, runs the asynchronous `body`, prints the outcome and exits.
  public func asyncMain(_ body: (ParsedArguments) async throws -> Void) async -> Never {
    let arguments = CommandLine.arguments.dropFirst()
    exit(with: await asyncOutcome { try await body(try command.parse(arguments)) })
  }

  /// Runs `body` and returns what to print and the status, without printing or exiting.
  public func outcome(_ body: () throws -> Void) -> Outcome {
    do {
      try body()
      return .success
    } catch {
      return outcome(for: error)
    }
  }

  /// Runs the asynchronous `body` and returns what to print and the status.
  public func asyncOutcome(_ body: () async throws -> Void) async -> Outcome {
    do {
      try await body()
      return .success
    } catch {
      return outcome(for: error)
    }
  }

  /// Maps an error thrown by parsing or by the tool to its stream, text and exit status.
  public func outcome(for error: any Error) -> Outcome {
    switch error {
    case let error as CommandLineError where error.code == .helpRequested:
      return Outcome(exitCode: .success, stream: .standardOutput, text: command.helpText() + "\n")
    case let error as CommandLineError where error.code == .versionRequested:
      let version = command.version ?? "Unspecified version"
      return Outcome(exitCode: .success, stream: .standardOutput, text: version + "\n")
    case let error as CommandLineError:
      var text = error.message.isEmpty ? "" : "Error: \(error.message)\n"
      if let help = error.help { text += "Help:  \(help)\n" }
      text += error.showsFullHelp ? "\n" + command.helpText() : command.usageMessage
      return Outcome(exitCode: .validationFailure, stream: .standardError, text: text + "\n")
    case let code as ExitCode:
      return Outcome(exitCode: code, stream: .standardError, text: "")
    default:
      return Outcome(exitCode: .failure, stream: .standardError, text: "Error: \(error)\n")
    }
  }

  /// Writes the outcome's text unbuffered and exits with its status.
  public func exit(with outcome: Outcome) -> Never {
    do {
      switch outcome.stream {
      case .standardOutput: try StandardOutput.write(outcome.text)
      case .standardError: try StandardError.write(outcome.text)
      }
    } catch {
      // Nowhere left to report a failed report: the status still tells what happened.
    }
    #if canImport(Glibc)
      Glibc.exit(outcome.exitCode.rawValue)
    #elseif canImport(Musl)
      Musl.exit(outcome.exitCode.rawValue)
    #endif
  }
}
