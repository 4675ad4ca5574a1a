public import CommandLineSupport
import DBus
import Notify

/// The version every NotifyBus tool reports.
public let notifyBusVersion = "0.1.0"

/// The `--bus` option every tool shares.
let busOption = OptionDescription.option(
  "--bus", value: "bus",
  abstract: "The bus: session, system, embedded, auto, or a D-Bus address.", default: "auto")

/// Reads `--bus`.
func bus(from arguments: ParsedArguments) throws(CommandLineError) -> Bus {
  guard let text = arguments.value("--bus") else { return .automatic }
  do {
    return try Bus(parsing: text)
  } catch {
    throw CommandLineError.validation("--bus: \(error.message)")
  }
}

/// Reads notification names, refusing invalid ones with a usage error that names them.
func names(_ texts: [String]) throws(CommandLineError) -> [NotifyName] {
  var result: [NotifyName] = []
  for text in texts {
    do {
      result.append(try NotifyName(text))
    } catch {
      throw CommandLineError.validation(error.message)
    }
  }
  return result
}

/// Connects, turning a failure into a runtime error (exit 1).
func connect(_ bus: Bus) async throws(ToolError) -> NotifyCenter {
  do {
    return try await NotifyCenter.connect(to: bus)
  } catch {
    throw ToolError(error.message)
  }
}

/// A runtime failure: printed as `Error: <message>`, exit status 1.
public struct ToolError: Error, CustomStringConvertible {
  public var description: String
  public init(_ description: String) { self.description = description }
}

extension ExitCode {
  /// `notify-watch --timeout` passed before `--count` deliveries.
  public static let timedOut = ExitCode(2)
}

/// Seconds and milliseconds of the wall clock, as `sec.mmm` (notifyutil's `-v` format).
func wallClockStamp() -> String {
  var spec = timespec()
  clock_gettime(CLOCK_REALTIME, &spec)
  let milliseconds = (spec.tv_nsec + 500_000) / 1_000_000
  let seconds = spec.tv_sec + (milliseconds >= 1000 ? 1 : 0)
  let fraction = milliseconds % 1000
  let padded = fraction < 10 ? "00\(fraction)" : fraction < 100 ? "0\(fraction)" : "\(fraction)"
  return "\(seconds).\(padded)"
}

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif
