public import CommandLineSupport
package import DBusCore
package import NotifyCore

/// The version every NotifyBus tool reports.
public let notifyBusVersion = "0.1.0"

/// The `--bus` option every tool shares.
package let busOption = OptionDescription.option(
  "--bus", value: "bus",
  abstract: "The bus: session, system, embedded, auto, or a D-Bus address.", default: "auto")

/// Reads `--bus`.
package func bus(from arguments: ParsedArguments) throws(CommandLineError) -> Bus {
  guard let text = arguments.value("--bus") else { return .automatic }
  do {
    return try Bus(parsing: text)
  } catch {
    throw CommandLineError.validation("--bus: \(error.message)")
  }
}

/// Reads notification names, refusing invalid ones with a usage error that names them.
package func names(_ texts: [String]) throws(CommandLineError) -> [NotifyName] {
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

extension ExitCode {
  /// `notify-watch --timeout` passed before `--count` deliveries.
  public static let timedOut = ExitCode(2)
}
