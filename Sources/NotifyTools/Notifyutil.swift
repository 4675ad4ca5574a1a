public import CommandLineSupport
import DBus
import Dispatch
import Notify
import NotifyToolsCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// `notifyutil`: Darwin's notifyutil, command for command, on NotifyBus.
///
/// Commands run left to right after the whole line has been checked. `-port` and `-M`,
/// `-R` are accepted: ports do not exist here, so port registrations are served like
/// dispatch ones, and NotifyBus always multiplexes and re-registers.
public enum Notifyutil {
  /// How later registrations are delivered.
  enum Mode: Equatable {
    case port, file, check, plain, dispatch
    case signal(CInt)

    var typeName: String {
      switch self {
      case .port: "port"
      case .file: "file"
      case .check: "check"
      case .plain: "plain"
      case .dispatch: "dispatch"
      case .signal: "signal"
      }
    }
  }

  /// One command of the line.
  enum Step: Equatable {
    case post(NotifyName)
    case watch(NotifyName, count: Int?, mode: Mode)
    case get(NotifyName)
    case set(NotifyName, UInt64)
  }

  /// What notifications print.
  enum Output: Equatable {
    case names, verbose, quiet
  }

  /// A checked command line.
  struct Plan: Equatable {
    var steps: [Step] = []
    var output = Output.names
    var postDelayMilliseconds = 100
    var bus = Bus.automatic
  }

  /// The command line: Darwin's options, help layout and usage, with NotifyBus's `--bus`.
  public static let command = CommandDescription(
    name: "notifyutil",
    abstract: "Post, watch, get and set notifications (Darwin notifyutil on NotifyBus).",
    discussion: """
      notifyutil is Darwin's notifyutil on NotifyBus's notification protocol, with the same \
      options and output. The whole command line is checked first; then the commands run \
      left to right. The program exits when no registration remains; with -w it runs until \
      killed.

      Each notification prints its key; with -v, [token] sec.mmm key state type, type being \
      port, dispatch, file, check, plain or signal; with -q nothing. -g prints key value. A \
      failed command prints key: Failed with code N (9 when no notifyd answers -g or -s; 7 \
      when notifyd refuses a mediated post). Signal mode prints SIGNAL N as each signal \
      arrives.

      Ports do not exist here: -port registrations are served like -dispatch ones. -file \
      registrations share one pipe that receives each token, 4 bytes big-endian; -check and \
      -plain ones are polled every 100 ms. -M and -R are accepted: NotifyBus always \
      multiplexes and registers again after notifyd or the bus restarts. -p waits until \
      the post is routed (with --bus system, until notifyd answers).

      -h and -help print the usage on standard error, --help on standard output; both exit \
      0. Bad usage prints Error: and the usage on standard error and exits 64 (Darwin exits \
      1 with "unrecognized option").
      """,
    version: notifyBusVersion,
    usage: "notifyutil [-q] [-v] [-z msec] [-M] [-R] [--bus bus] command ...",
    options: [
      .flag("-q", abstract: "quiet mode"),
      .flag("-v", abstract: "verbose - prints time, key, state value, and type"),
      .option("-z", value: "msec", abstract: "pause msec milliseconds after posting [default 100]"),
      .flag("-M", abstract: "multiplex notifications (accepted; always on)"),
      .flag("-R", abstract: "regenerate registrations if notifyd restarts (accepted; always on)"),
      .bus(abstract: "session, system, embedded, auto (default) or a D-Bus address", default: nil),
      command("-port", "switch to mach port for subsequent registrations [default]"),
      command("-file", "switch to file descriptor for subsequent registrations"),
      command("-check", "switch to shared memory for subsequent registrations"),
      command("-plain", "switch to plain polling for subsequent registrations").with {
        $0.isHidden = true
      },
      OptionDescription(
        names: ["-signal", "-sig"], valueName: "signal",
        abstract: "switch to signal [#] for subsequent registrations\n"
          + "initial default for signal is 1 (SIGHUP)",
        label: "-signal [<#>]"
      ).with {
        $0.isValueOptional = true
        $0.section = "commands"
      },
      command("-dispatch", "switch to dispatch for subsequent registrations"),
      command("-p", key: "post a notification for key"),
      command("-w", key: "register for key and report notifications"),
      command(
        "-#", key: #"(# is an integer value, eg "-1") register for key and report # notifications"#
      ).with { $0.isNumbered = true },
      command("-g", key: "get state value for key"),
      command("-s", key: "set state value for key").with { $0.additionalValueNames = ["val"] },
    ],
    exitStatuses: [
      .init(.success, "No registration remains, or the usage was printed."),
      .init(.failure, "No bus could be reached, or standard output could not be written."),
      .init(.validationFailure, "Bad usage, reported with Error: and the usage."),
    ],
    syntax: .ordered,
    environment: CommandDescription.Entry.busEnvironment,
    files: CommandDescription.Entry.busFiles,
    examples: [
      .init("notifyutil -1 com.example.ready", "Wait for one post of a name, then exit:"),
      .init("notifyutil -p com.example.ready", "Post a name:"),
      .init(
        "notifyutil -s com.example.level 42 -g com.example.level",
        "Set a name's state, then print it (notifyd must be running):"),
      .init("notifyutil -v -signal 10 -w com.example.ready", "Watch by signal, verbosely:"),
    ],
    seeAlso: ["notify-post(1)", "notify-watch(1)", "notifyd(8)"])

  /// A command of notifyutil's `commands:` section that takes no value.
  private static func command(_ name: String, _ abstract: String) -> OptionDescription {
    OptionDescription.flag(name, abstract: abstract).with { $0.section = "commands" }
  }

  /// A command of notifyutil's `commands:` section that takes a key.
  private static func command(_ name: String, key abstract: String) -> OptionDescription {
    OptionDescription.option(name, value: "key", abstract: abstract).with {
      $0.section = "commands"
    }
  }

  /// What notifyutil adds on standard error after a `Failed with code 9`: status 9 means
  /// no notifyd answered and the bus could not start one.
  static let serverNotFoundHint =
    "notifyutil: notifyd is not running and the bus cannot start it: run 'notifyd &', "
    + "or 'notifyd --install-service' once for D-Bus activation (see notifyd(8))\n"

  /// Turns the parsed line into the steps that run left to right.
  static func plan(_ arguments: ParsedArguments) throws(CommandLineError) -> Plan {
    var plan = Plan()
    var mode = Mode.port
    for occurrence in arguments.occurrences {
      let token = occurrence.spelling
      func key() throws(CommandLineError) -> NotifyName {
        try names([occurrence.values[0]])[0]
      }
      switch occurrence.option.names[0] {
      case "-q": plan.output = .quiet
      case "-v": plan.output = .verbose
      case "-z":
        let delay = try occurrence.value(as: Int.self) ?? 0
        guard delay >= 0 else {
          throw CommandLineError.validation(
            "-z needs a number of milliseconds that is not negative.")
        }
        plan.postDelayMilliseconds = delay
      case "--bus": plan.bus = try Bus(option: occurrence.values[0])
      case "-port": mode = .port
      case "-file": mode = .file
      case "-check": mode = .check
      case "-plain": mode = .plain
      case "-dispatch": mode = .dispatch
      case "-signal":
        let number = try occurrence.value(as: Int32.self) ?? 1
        guard (1...64).contains(number), number != SIGKILL, number != SIGSTOP else {
          throw CommandLineError.validation("\(token): signal \(number) cannot be used.")
        }
        mode = .signal(number)
      case "-p": plan.steps.append(.post(try key()))
      case "-w": plan.steps.append(.watch(try key(), count: nil, mode: mode))
      case "-#":
        // The parser checked that the digits fit in an Int.
        let count = Int(token.dropFirst()) ?? 0
        guard count > 0 else {
          throw CommandLineError.validation("\(token): the count must be positive.")
        }
        plan.steps.append(.watch(try key(), count: count, mode: mode))
      case "-g": plan.steps.append(.get(try key()))
      case "-s":
        plan.steps.append(.set(try key(), try occurrence.value(at: 1, as: UInt64.self) ?? 0))
      default: break  // -M, -R: always on
      }
    }
    return plan
  }

  /// Runs notifyutil with parsed arguments; returns once no registration remains.
  public static func run(_ arguments: ParsedArguments) async throws {
    let plan = try plan(arguments)
    if plan.steps.isEmpty {
      throw CommandLineError(
        .missingArgument, message: "Give at least one command.", showsFullHelp: false)
    }
    let center = try await connect(plan.bus)
    let session = Session(center: center, output: plan.output)
    do {
      try await session.run(plan)
    } catch {
      await center.close()
      throw error
    }
    await center.close()
    if await session.serverNotFound {
      // Darwin's line and status stay as they are; one line says what to do.
      try? StandardError.write(serverNotFoundHint)
    }
  }
}

/// One notifyutil run: its registrations, and what they print.
actor Session {
  let center: NotifyCenter
  let output: Notifyutil.Output
  private var watches: [NotifyToken: (name: NotifyName, remaining: Int?, mode: Notifyutil.Mode)] =
    [:]
  private var finished: CheckedContinuation<Void, Never>?
  private var sharedFileDescriptor: CInt?
  private var signalSources: [CInt: any DispatchSourceSignal] = [:]
  private var pollTask: Task<Void, Never>?
  /// Why standard output could not be written, which ends the run.
  private var writeFailure: StandardStreamError?
  private let deliveries = DispatchQueue(label: "org.notifybus.notifyutil")
  /// Whether a command failed with status 9 (server not found).
  private(set) var serverNotFound = false

  init(center: NotifyCenter, output: Notifyutil.Output) {
    self.center = center
    self.output = output
  }

  func run(_ plan: Notifyutil.Plan) async throws {
    for step in plan.steps {
      if let line = await perform(step, postDelay: plan.postDelayMilliseconds) {
        try StandardOutput.writeLine(line)
      }
    }
    guard !watches.isEmpty else { return }
    await withCheckedContinuation { finished = $0 }
    pollTask?.cancel()
    if let writeFailure { throw writeFailure }
  }

  /// Writes a line of output; a failure (EPIPE when SIGPIPE is ignored) ends the run.
  private func write(_ line: String) {
    guard writeFailure == nil else { return }
    do {
      try StandardOutput.writeLine(line)
    } catch {
      writeFailure = error
      finished?.resume()
      finished = nil
    }
  }

  /// Runs one command; returns the line it prints, if any.
  private func perform(_ step: Notifyutil.Step, postDelay: Int) async -> String? {
    func failed(_ name: NotifyName, _ error: NotifyError) -> String {
      if error.status == .serverNotFound { serverNotFound = true }
      return "\(name): Failed with code \(error.status.rawValue)"
    }
    switch step {
    case .post(let name):
      do throws(NotifyError) {
        // Non-mediated: the post and a round trip; mediated: notifyd's answer.
        try await center.postChecked(name)
      } catch {
        return failed(name, error)
      }
      if postDelay > 0 { try? await Task.sleep(for: .milliseconds(postDelay)) }
      return nil
    case .get(let name):
      do throws(NotifyError) {
        return "\(name) \(try await center.state(of: name))"
      } catch {
        return failed(name, error)
      }
    case .set(let name, let value):
      do throws(NotifyError) {
        try await center.setState(value, for: name)
        return nil
      } catch {
        return failed(name, error)
      }
    case .watch(let name, let count, let mode):
      do throws(NotifyError) {
        try await watch(name, count: count, mode: mode)
        return nil
      } catch {
        return failed(name, error)
      }
    }
  }

  private func watch(_ name: NotifyName, count: Int?, mode: Notifyutil.Mode)
    async throws(NotifyError)
  {
    let token: NotifyToken
    switch mode {
    case .port, .dispatch:
      token = try await center.register(name, queue: deliveries) { [weak self] token in
        Task { await self?.delivered(token) }
      }
    case .check, .plain:
      token = try await center.registerCheck(name)
      _ = try center.check(token)
      startPolling()
    case .file:
      let registered = try await center.registerFileDescriptor(name, reusing: sharedFileDescriptor)
      token = registered.token
      if sharedFileDescriptor == nil {
        sharedFileDescriptor = registered.fileDescriptor
        startReading(registered.fileDescriptor)
      }
    case .signal(let number):
      token = try await center.registerSignal(name, signal: number)
      _ = try center.check(token)
      watchSignal(number)
    }
    watches[token] = (name, count, mode)
  }

  /// Reports one delivery to `token`, and ends the watch after its count.
  func delivered(_ token: NotifyToken) async {
    guard let watch = watches[token] else { return }
    switch output {
    case .quiet: break
    case .names: write(watch.name.rawValue)
    case .verbose:
      let state: String
      do throws(NotifyError) {
        state = String(try await center.state(of: watch.name))
      } catch {
        state = ": Failed with code \(error.status.rawValue)"
      }
      write("[\(token)] \(wallClockStamp()) \(watch.name) \(state) \(watch.mode.typeName)")
    }
    guard let remaining = watch.remaining else { return }
    if remaining > 1 {
      watches[token]?.remaining = remaining - 1
      return
    }
    watches[token] = nil
    try? center.cancel(token)
    if watches.isEmpty {
      finished?.resume()
      finished = nil
    }
  }

  /// Polls check registrations every 100 ms, as notifyutil does.
  private func startPolling() {
    guard pollTask == nil else { return }
    pollTask = Task {
      while !Task.isCancelled {
        try? await Task.sleep(for: .milliseconds(100))
        await self.pollChecks { mode in mode == .check || mode == .plain }
      }
    }
  }

  private func pollChecks(_ include: (Notifyutil.Mode) -> Bool) async {
    for (token, watch) in watches.sorted(by: { $0.key < $1.key }) where include(watch.mode) {
      if (try? center.check(token)) == true { await delivered(token) }
    }
  }

  /// Reads tokens from the shared pipe on a thread of its own.
  private func startReading(_ fd: CInt) {
    let queue = DispatchQueue(label: "org.notifybus.notifyutil.file")
    queue.async { [weak self] in
      var bytes: [UInt8] = [0, 0, 0, 0]
      while read(fd, &bytes, 4) == 4 {
        let raw = Int32(
          bitPattern: UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8
            | UInt32(bytes[3]))
        let token = NotifyToken(rawValue: raw)
        Task { await self?.delivered(token) }
      }
    }
  }

  /// Ignores the signal and watches it with a dispatch source, as notifyutil does.
  private func watchSignal(_ number: CInt) {
    guard signalSources[number] == nil else { return }
    signal(number, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: number, queue: deliveries)
    source.setEventHandler { [weak self] in
      Task { await self?.signalArrived(number) }
    }
    source.resume()
    signalSources[number] = source
  }

  private func signalArrived(_ number: CInt) async {
    if output != .quiet { write("SIGNAL \(number)") }
    await pollChecks { mode in mode == .signal(number) }
  }
}
