public import CommandLineSupport
public import DBusCore
package import NotifyCore

/// The version every NotifyBus tool reports with `--version`, and its manual pages' footer.
public let notifyBusVersion = "0.1.0"

extension OptionDescription {
  /// The `--bus` option every tool shares, defaulting to `auto`.
  public static let bus = bus()

  /// A `--bus` option with its own abstract or default, such as notifyd's, whose default is
  /// the bus that activated it.
  public static func bus(
    abstract: String = "The bus: session, system, embedded, auto, or a D-Bus address.",
    default defaultValue: String? = "auto"
  ) -> OptionDescription {
    OptionDescription(
      names: ["--bus"], valueName: "bus", abstract: abstract, defaultValue: defaultValue
    ).with { $0.completion = .words(["session", "system", "embedded", "auto"]) }
  }
}

extension ParsedArguments {
  /// The bus `--bus` names; its default when it is absent; `nil` when it is absent and has
  /// no default.
  ///
  /// - Throws: ``CommandLineError`` `--bus: invalid D-Bus address 'x': …`.
  public func bus() throws(CommandLineError) -> Bus? {
    guard let text = value("--bus") else { return nil }
    return try Bus(option: text)
  }
}

extension Bus {
  /// Reads a `--bus` value: `session`, `system`, `embedded`, `auto` or a D-Bus address.
  ///
  /// - Throws: ``CommandLineError`` `--bus: invalid D-Bus address 'x': …`.
  public init(option text: String) throws(CommandLineError) {
    do {
      self = try Bus(parsing: text)
    } catch {
      throw CommandLineError.validation("--bus: \(error.message)")
    }
  }
}

extension CommandDescription.Entry {
  /// The variables that decide the automatic bus, for every tool's ENVIRONMENT section.
  public static let busEnvironment: [CommandDescription.Entry] = [
    .init(
      "NOTIFYBUS_BUS_ADDRESS",
      "The bus to use for --bus auto, when set and not empty; a malformed address is an error."),
    .init(
      "DBUS_SESSION_BUS_ADDRESS",
      "The session bus, tried next for --bus auto, and the bus of --bus session."),
    .init(
      "XDG_RUNTIME_DIR",
      "Holds the session bus socket (bus) when DBUS_SESSION_BUS_ADDRESS is unset, and the "
        + "embedded bus (notifybus/bus), started when no session bus answers; when it is "
        + "unset, /run/user/UID stands in for it if it is the user's."),
    .init("DBUS_SYSTEM_BUS_ADDRESS", "The bus of --bus system."),
  ]

  /// The embedded bus's files, for every tool's FILES section.
  public static let busFiles: [CommandDescription.Entry] = [
    .init(
      "$XDG_RUNTIME_DIR/notifybus/bus",
      "The embedded bus's socket (with XDG_RUNTIME_DIR unset, /run/user/UID/notifybus/bus, "
        + "or /tmp/notifybus-UID/bus when that is not the user's); bus.log beside it "
        + "collects the daemon's messages, at most 1 MiB.")
  ]
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
