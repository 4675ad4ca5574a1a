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
/// | `--generate-completion-script <shell>`, `--generate-manual-page` | stdout | the script or page | 0 |
/// | ``CommandLineError`` | stderr | `Error: …`, `Help:  …`, `Usage: …`, `  See '…'` | 64 |
/// | ``ExitCode`` thrown | | nothing | that code |
/// | any other error | stderr | `Error: <description>` | 1 |
///
/// ```swift
/// await CommandRunner(NotifyWatch.command).asyncMain { arguments in
///   for name in arguments.values("name") { try await watch(name) }
/// }
/// ```
///
/// A command with subcommands gets the subcommand's arguments; ``ParsedArguments/command``
/// says which one was chosen:
///
/// ```swift
/// await CommandRunner(ReadLaterTool.command).asyncMain { arguments in
///   switch arguments.command.name {
///   case "watch": try await watch(arguments)
///   default: try list(arguments)
///   }
/// }
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

  /// Parses the command line, runs `body`, prints the outcome and exits.
  public func main(_ body: (ParsedArguments) throws -> Void) -> Never {
    exit(
      with: outcome {
        let parsed = try command.parse(try Self.commandLineArguments())
        do {
          try body(parsed)
        } catch var error as CommandLineError {
          error.commandPath = parsed.command.path
          throw error
        }
      })
  }

  /// Parses the command line, runs the asynchronous `body`, prints the outcome and exits.
  public func asyncMain(_ body: (ParsedArguments) async throws -> Void) async -> Never {
    exit(
      with: await asyncOutcome {
        let parsed = try command.parse(try Self.commandLineArguments())
        do {
          try await body(parsed)
        } catch var error as CommandLineError {
          error.commandPath = parsed.command.path
          throw error
        }
      })
  }

  /// The process's arguments without the program name, each checked to be UTF-8.
  ///
  /// `CommandLine.arguments` replaces invalid bytes with U+FFFD, so a name or URL typed in
  /// another encoding would silently become a different one; this refuses it instead.
  ///
  /// - Throws: ``CommandLineError`` with code ``CommandLineError/Code/invalidEncoding``:
  ///   `The value 'caf\xE9' for '--url' is not valid UTF-8`.
  public static func commandLineArguments() throws(CommandLineError) -> [String] {
    var result: [String] = []
    // `max`: a process can be started with no arguments at all, not even its name.
    for index in 1..<max(1, Int(CommandLine.argc)) {
      guard let pointer = CommandLine.unsafeArgv[index] else { continue }
      let bytes = UnsafeBufferPointer(start: pointer, count: strlen(pointer)).map {
        UInt8(bitPattern: $0)
      }
      guard let text = String(validating: bytes, as: UTF8.self) else {
        throw .invalidEncoding(bytes, after: result.last)
      }
      result.append(text)
    }
    return result
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
    let command =
      (error as? CommandLineError).flatMap { self.command.subcommand(at: $0.commandPath) }
      ?? self.command
    switch error {
    case let error as CommandLineError where error.code == .helpRequested:
      // Darwin's layout has no final empty line; AP's has one.
      let text = command.helpText() + (command.syntax == .ordered ? "" : "\n")
      return Outcome(
        exitCode: .success,
        stream: error.helpGoesToStandardError ? .standardError : .standardOutput,
        text: text)
    case let error as CommandLineError where error.code == .completionScriptRequested:
      let shell = CompletionShell(rawValue: error.message) ?? .bash
      return Outcome(
        exitCode: .success, stream: .standardOutput, text: command.completionScript(for: shell))
    case let error as CommandLineError where error.code == .manualPageRequested:
      return Outcome(exitCode: .success, stream: .standardOutput, text: command.manualPage())
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
