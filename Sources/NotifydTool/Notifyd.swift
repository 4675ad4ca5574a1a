public import CommandLineSupport
import DBus
import Dispatch
import NotifyBridge
import NotifyServer
import NotifyServerFiles
import NotifyToolsCore
import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The `notifyd` command: argument parsing and the run loop around ``NotifyServer``.
public enum Notifyd {
  /// The command line.
  public static let command = CommandDescription(
    name: "notifyd",
    abstract: "Keep notification state and post on behalf of clients.",
    discussion: """
      Owns org.notifybus.Notify1 on the bus and serves SetState, GetState, Post, \
      RestoreState, ListNames and GetStatistics. Runs in the \
      foreground and exits cleanly on SIGTERM or SIGINT. State \
      is kept in a state file unless --no-persist is given: mode 0600 in a directory of \
      this user's (created 0700), replaced atomically, never through a symbolic link, with \
      a checksum; a corrupt file, or one with more names than --max-names, is moved aside \
      to PATH.corrupt-SECONDS (never replacing an earlier copy) and notifyd starts empty. \
      On SIGHUP it reads --config \
      again; when the file cannot be read or parsed, the rules in force stay and the log \
      says why. On SIGUSR1 it writes a status dump to the log (the table's size and its \
      counters), on SIGUSR2 a detailed one that adds every access rule and name, and goes \
      on serving.

      It logs to standard error, and so to the journal under systemd; started by D-Bus \
      activation without systemd, to $XDG_STATE_HOME/notifybus/notifyd.log \
      (~/.local/state/notifybus/notifyd.log), which at 1 MiB becomes notifyd.log.1. Every \
      loss of the bus and every reconnect is logged. A notifyd the bus started exits, \
      writing its state, when its bus is gone and another bus answers at its address; \
      given --bus, it keeps reconnecting.

      With --bridge (or bridge lines in --config), posts and state of the bridged \
      namespaces travel through an MQTT 5 broker to the notifyds of other hosts, and \
      theirs come back (Protocol/bridge.md). A broker that is away never stops notifyd.

      With --install-service, writes the D-Bus service file that starts this notifyd on \
      demand, and exits.
      """,
    version: notifyBusVersion,
    options: [
      .bus(
        abstract:
          "The bus: session, system, embedded, auto, or a D-Bus address (default: the "
          + "activating bus, else auto).",
        default: nil),
      .option(
        "--state-file", value: "path",
        abstract:
          "Where state persists (default $XDG_STATE_HOME/notifybus/notifyd.state or "
          + "~/.local/state/notifybus/notifyd.state)."
      ).with { $0.completion = .file },
      .flag("--no-persist", abstract: "Keep state in memory only."),
      .option(
        "--config", value: "path",
        abstract:
          "The configuration: access rules 'reserve PREFIX UID GID MODE' and MQTT bridges "
          + "'bridge URL' with 'bridge-…' lines (Protocol/bridge.md)."
      ).with { $0.completion = .file },
      .option(
        "--max-names", value: "n", abstract: "The most names kept.", default: "100000"),
      .option(
        "--bridge", value: "url",
        abstract:
          "Bridge names to the MQTT 5 broker at mqtt://HOST[:PORT] or mqtts://HOST[:PORT] "
          + "(Protocol/bridge.md)."),
      .option(
        "--bridge-namespace", value: "namespace",
        abstract: "A namespace --bridge carries, such as group.example; repeat for more.",
        isRepeatable: true),
      .option("--bridge-user", value: "name", abstract: "The MQTT user name of --bridge."),
      .option(
        "--bridge-password-file", value: "path",
        abstract: "The file whose first line is --bridge-user's password."
      ).with { $0.completion = .file },
      .flag(
        "--install-service",
        abstract: "Write org.notifybus.Notify1.service for D-Bus activation, then exit."),
      .option(
        "--service-dir", value: "dir",
        abstract:
          "Where --install-service writes (default: the embedded bus's activation directory)."
      ).with { $0.completion = .directory },
    ],
    exitStatuses: [
      .init(.success, "Stopped by SIGTERM or SIGINT, or the service file was written."),
      .init(
        .failure,
        "The bus could not be reached, the name is taken, or a file could not be read or written."
      ),
      .init(.validationFailure, "An argument was invalid."),
    ],
    manualSection: 8,
    environment: CommandDescription.Entry.busEnvironment + [
      .init(
        "DBUS_STARTER_ADDRESS",
        "Set by the bus that started notifyd by activation; notifyd serves that bus when "
          + "--bus is not given."),
      .init(
        "XDG_STATE_HOME",
        "Holds the default state file, notifybus/notifyd.state (default ~/.local/state)."),
      .init(
        "NOTIFYBUS_SERVICE_DIR",
        "The embedded bus's activation directory, where --install-service writes by default."),
    ],
    files: [
      .init(
        "$XDG_STATE_HOME/notifybus/notifyd.state",
        "The state file, written on SIGTERM and SIGINT and read at start; a corrupt one is "
          + "moved aside to notifyd.state.corrupt-SECONDS (-SECONDS-2 and so on when that exists)."),
      .init(
        "$XDG_DATA_HOME/notifybus/dbus-1/services/org.notifybus.Notify1.service",
        "The D-Bus service file --install-service writes for the embedded bus."),
    ] + CommandDescription.Entry.busFiles,
    examples: [
      .init("notifyd --install-service", "Let the embedded bus start notifyd on demand:"),
      .init(
        "notifyd --bus session --no-persist",
        "Serve the session bus in the foreground, keeping state in memory only:"),
      .init(
        "notifyd --config /etc/notifybus/notifyd.conf",
        "Apply access rules; send SIGHUP after editing the file to read it again:"),
    ],
    seeAlso: ["notify-post(1)", "notify-watch(1)", "notifyutil(1)"])

  /// Runs the command with parsed arguments.
  public static func run(_ arguments: ParsedArguments) async throws {
    let options = try Options(arguments)
    if arguments.contains("--install-service") {
      let file = ServiceFile(executable: ServiceFile.currentExecutable(), arguments: options.passOn)
      let directory = arguments.value("--service-dir") ?? EmbeddedBus.serviceDirectory
      let path = try file.install(in: directory)
      try StandardOutput.write("\(path)\n")
      return
    }
    let log = NotifydLog.forThisProcess().writer
    // Both signal watchers exist before the name is taken, so no signal finds the default
    // action (which ends the process) once clients can see notifyd.
    let stop = TerminationSignals()
    let serving = Mutex<NotifyServer?>(nil)
    let hangups = HangupSignals { [options] in
      guard let server = serving.withLock({ $0 }) else {
        log("SIGHUP: not serving yet; the configuration read at start stays")
        return
      }
      guard let path = options.configurationPath else {
        log("SIGHUP: there is no --config to read again")
        return
      }
      do throws(NotifydError) {
        let policy = try AccessPolicy.load(contentsOf: path)
        server.replaceAccessPolicy(policy)
        log("SIGHUP: read \(path) again: \(policy.rules.count) rules in force")
      } catch {
        log(
          "SIGHUP: keeping the \(server.accessPolicy.rules.count) rules in force: \(error.message)")
      }
    }
    defer { hangups.cancel() }
    let status = StatusSignals { signal, detailed in
      guard let server = serving.withLock({ $0 }) else {
        log("\(signal): not serving yet; no status to write")
        return
      }
      server.logStatus(trigger: signal, detailed: detailed)
    }
    defer { status.cancel() }
    let connection: BusConnection
    do {
      connection = try await BusConnection.connect(to: options.bus)
    } catch {
      throw NotifydError(.bus, "cannot reach the \(options.bus) bus: \(error.message)")
    }
    let server: NotifyServer
    do {
      server = try await NotifyServer.start(
        on: connection,
        configuration: options.serverConfiguration(log: log))
    } catch {
      await connection.close()
      throw error
    }
    serving.withLock { $0 = server }
    let watch = await BusWatch(connection, starterAddress: options.starterAddress, log: log) {
      line in
      log(line)
      stop.request()
    }
    let signal = await stop.wait()
    if signal != 0 { log("stopping on \(signal == SIGINT ? "SIGINT" : "SIGTERM")") }
    await server.stop()
    _ = watch
  }

  /// The checked options.
  struct Options {
    var bus: Bus
    var store: StateStore?
    var policy: AccessPolicy
    /// The absolute path of `--config`, read again on SIGHUP.
    var configurationPath: String?
    var capacity: Int
    /// The MQTT bridges, from `--bridge` and from `bridge` lines of `--config`.
    var bridges: [BridgeConfiguration] = []
    /// The options a service file passes on to the activated notifyd.
    var passOn: [String] = []
    /// The activating bus's address (`DBUS_STARTER_ADDRESS`), when it chose the bus.
    var starterAddress: BusAddress?

    func serverConfiguration(log: @escaping @Sendable (String) -> Void)
      -> NotifyServer.Configuration
    {
      var configuration = NotifyServer.Configuration(
        policy: policy, store: store, capacity: capacity, log: log)
      configuration.bridges = bridges
      return configuration
    }

    init(_ arguments: ParsedArguments) throws {
      if let text = arguments.value("--bus"), let given = try arguments.bus() {
        bus = given
        passOn += ["--bus", text]
      } else if let starter = Environment.value("DBUS_STARTER_ADDRESS"),
        let address = try? BusAddress(starter)
      {
        bus = .address(address)
        starterAddress = address
      } else {
        bus = .automatic
      }
      capacity = try arguments.value("--max-names", as: Int.self) ?? 100_000
      guard capacity > 0 else {
        throw CommandLineError.validation("--max-names must be positive.")
      }
      if arguments.contains("--max-names") { passOn += ["--max-names", String(capacity)] }
      if arguments.contains("--no-persist") {
        if arguments.contains("--state-file") {
          throw CommandLineError.validation("--no-persist and --state-file exclude each other.")
        }
        store = nil
        passOn.append("--no-persist")
      } else if let path = arguments.value("--state-file") {
        guard !path.isEmpty else {
          throw CommandLineError.validation("--state-file: the path is empty.")
        }
        let absolute = Self.absolute(path)
        store = StateStore(path: absolute, maximumRecords: capacity)
        passOn += ["--state-file", absolute]
      } else if let path = StateStore.defaultPath {
        store = StateStore(path: path, maximumRecords: capacity)
      } else {
        throw CommandLineError.validation(
          "no state file: HOME and XDG_STATE_HOME are unset; give --state-file or --no-persist.")
      }
      if let path = arguments.value("--config") {
        let absolute = Self.absolute(path)
        policy = try AccessPolicy.load(contentsOf: absolute)
        configurationPath = absolute
        passOn += ["--config", absolute]
      } else {
        policy = AccessPolicy()
      }
      try readBridges(arguments)
    }

    /// Reads `--bridge` and its options, and the `bridge` lines of `--config`.
    private mutating func readBridges(_ arguments: ParsedArguments) throws {
      let passwordFile = arguments.value("--bridge-password-file").map(Self.absolute)
      let fromOptions: BridgeConfiguration?
      do {
        fromOptions = try BridgeConfiguration.commandLine(
          broker: arguments.value("--bridge"), namespaces: arguments.values("--bridge-namespace"),
          user: arguments.value("--bridge-user"), passwordFile: passwordFile)
      } catch {
        throw CommandLineError.validation(error.message)
      }
      if let path = configurationPath {
        bridges = try Self.loadBridges(path)
      }
      if let fromOptions {
        bridges.append(fromOptions)
        for option in ["--bridge", "--bridge-user"] {
          if let value = arguments.value(option) { passOn += [option, value] }
        }
        for namespace in arguments.values("--bridge-namespace") {
          passOn += ["--bridge-namespace", namespace]
        }
        if let passwordFile { passOn += ["--bridge-password-file", passwordFile] }
      }
      for index in bridges.indices {
        do {
          try bridges[index].loadSecrets()
        } catch {
          throw NotifydError(.configuration, error.message)
        }
      }
    }

    static func loadBridges(_ path: String) throws(NotifydError) -> [BridgeConfiguration] {
      let bytes: [UInt8]
      switch BridgeFiles.read(path) {
      case .success(let contents): bytes = contents
      case .failure(let error):
        throw NotifydError(.configuration, "cannot read the configuration: \(error)")
      }
      do throws(BridgeError) {
        return try BridgeConfiguration.parse(bytes, path: path)
      } catch {
        throw NotifydError(.configuration, error.message)
      }
    }

    static func absolute(_ path: String) -> String { absolutePath(path) }
  }
}

/// Waits for SIGTERM or SIGINT.
///
/// The signals are ignored and watched from creation on, so one that arrives before
/// ``wait()`` is not lost.
final class TerminationSignals: @unchecked Sendable {
  // Safety of @unchecked Sendable: `sources` is written only in init; `received` and
  // `waiter` are touched only on `queue`.
  private var sources: [any DispatchSourceSignal] = []
  private let queue = DispatchQueue(label: "notifyd.signals")
  private var received: CInt?
  private var waiter: CheckedContinuation<CInt, Never>?

  init() {
    for number in [SIGTERM, SIGINT] {
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
      source.setEventHandler { [weak self] in self?.fire(number) }
      source.resume()
      sources.append(source)
    }
  }

  deinit {
    for source in sources { source.cancel() }
  }

  /// Ends ``wait()`` as a signal would, with 0 for the signal number.
  func request() {
    queue.async { self.fire(0) }
  }

  private func fire(_ number: CInt) {
    guard received == nil else { return }
    received = number
    waiter?.resume(returning: number)
    waiter = nil
  }

  /// Returns the first of the two signals to arrive, or 0 after ``request()``.
  func wait() async -> CInt {
    await withCheckedContinuation { continuation in
      queue.async {
        if let received = self.received {
          continuation.resume(returning: received)
        } else {
          self.waiter = continuation
        }
      }
    }
  }
}

/// Runs a handler on each SIGHUP until cancelled; the signal no longer ends the process.
final class HangupSignals {
  private let source: any DispatchSourceSignal

  init(_ handler: @escaping @Sendable () -> Void) {
    signal(SIGHUP, SIG_IGN)
    source = DispatchSource.makeSignalSource(
      signal: SIGHUP, queue: DispatchQueue(label: "notifyd.hangup"))
    source.setEventHandler(handler: handler)
    source.resume()
  }

  func cancel() { source.cancel() }
}
