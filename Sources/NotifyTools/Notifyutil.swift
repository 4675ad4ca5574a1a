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

  /// The usage text, Darwin's with NotifyBus's `--bus`.
  public static let usage = """
    usage: notifyutil [-q] [-v] [-z msec] [-M] [-R] [--bus bus] command ...
        -q             quiet mode
        -v             verbose - prints time, key, state value, and type
        -z msec        pause msec milliseconds after posting [default 100]
        -M             multiplex notifications (accepted; always on)
        -R             regenerate registrations if notifyd restarts (accepted; always on)
        --bus bus      session, system, embedded, auto (default) or a D-Bus address
    commands:
        -port          switch to mach port for subsequent registrations [default]
        -file          switch to file descriptor for subsequent registrations
        -check         switch to shared memory for subsequent registrations
        -signal [#]    switch to signal [#] for subsequent registrations
                       initial default for signal is 1 (SIGHUP)
        -dispatch      switch to dispatch for subsequent registrations
        -p key         post a notification for key
        -w key         register for key and report notifications
        -# key         (# is an integer value, eg "-1") register for key and report # notifications
        -g key         get state value for key
        -s key val     set state value for key
    """

  /// What notifyutil adds on standard error after a `Failed with code 9`: status 9 means
  /// no notifyd answered and the bus could not start one.
  static let serverNotFoundHint =
    "notifyutil: notifyd is not running and the bus cannot start it: run 'notifyd &', "
    + "or 'notifyd --install-service' once for D-Bus activation (see notifyd(8))\n"

  /// Checks a whole command line, as notifyutil's first pass does.
  static func plan(_ arguments: [String]) throws(CommandLineError) -> Plan {
    var plan = Plan()
    var mode = Mode.port
    var tokens = ArgumentTokens(arguments)
    func name(_ option: String) throws(CommandLineError) -> NotifyName {
      let text = try tokens.nextValue(for: option, valueName: "key")
      do {
        return try NotifyName(text)
      } catch {
        throw CommandLineError.validation(error.message)
      }
    }
    while let token = tokens.next() {
      switch token {
      case "-q": plan.output = .quiet
      case "-v": plan.output = .verbose
      case "-M", "-R": break
      case "-z":
        plan.postDelayMilliseconds = try tokens.nextValue(
          for: "-z", valueName: "msec", as: Int.self)
        guard plan.postDelayMilliseconds >= 0 else {
          throw CommandLineError.validation(
            "-z needs a number of milliseconds that is not negative.")
        }
      case "--bus":
        let text = try tokens.nextValue(for: "--bus", valueName: "bus")
        do {
          plan.bus = try Bus(parsing: text)
        } catch {
          throw CommandLineError.validation("--bus: \(error.message)")
        }
      case "-port": mode = .port
      case "-file": mode = .file
      case "-check": mode = .check
      case "-plain": mode = .plain
      case "-dispatch": mode = .dispatch
      case "-signal", "-sig":
        let number =
          try tokens.nextOptionalValue(for: token, valueName: "signal", as: Int32.self) ?? 1
        guard (1...64).contains(number), number != SIGKILL, number != SIGSTOP else {
          throw CommandLineError.validation("\(token): signal \(number) cannot be used.")
        }
        mode = .signal(number)
      case "-p": plan.steps.append(.post(try name("-p")))
      case "-w": plan.steps.append(.watch(try name("-w"), count: nil, mode: mode))
      case "-g": plan.steps.append(.get(try name("-g")))
      case "-s":
        let key = try name("-s")
        let value = try tokens.nextValue(for: "-s <key>", valueName: "val", as: UInt64.self)
        plan.steps.append(.set(key, value))
      default:
        guard let count = try ArgumentTokens.numericOption(token) else {
          throw ArgumentTokens.unknownOption(token)
        }
        guard count > 0 else {
          throw CommandLineError.validation("\(token): the count must be positive.")
        }
        plan.steps.append(.watch(try name(token), count: count, mode: mode))
      }
    }
    return plan
  }

  /// Runs notifyutil with `arguments` (without the program name) and returns its exit
  /// status: 0 once no registration remains.
  public static func main(_ arguments: [String]) async -> ExitCode {
    let runner = CommandRunner(
      CommandDescription(
        name: "notifyutil", abstract: "Darwin notifyutil on NotifyBus.", version: notifyBusVersion,
        usage: "notifyutil [-q] [-v] [-z msec] [-M] [-R] [--bus bus] command ..."))
    if arguments.contains("-h") || arguments.contains("-help") {
      try? StandardError.write(usage + "\n")
      return .success
    }
    if arguments.contains("--help") {
      try? StandardOutput.write(usage + "\n")
      return .success
    }
    if arguments.contains("--version") {
      try? StandardOutput.write(notifyBusVersion + "\n")
      return .success
    }
    let outcome = await runner.asyncOutcome {
      let plan = try plan(arguments)
      if plan.steps.isEmpty {
        throw CommandLineError(
          .missingArgument, message: "Give at least one command.", showsFullHelp: false)
      }
      let center = try await connect(plan.bus)
      let session = Session(center: center, output: plan.output)
      try await session.run(plan)
      await center.close()
      if await session.serverNotFound {
        // Darwin's line and status stay as they are; one line says what to do.
        try? StandardError.write(serverNotFoundHint)
      }
    }
    if !outcome.text.isEmpty {
      switch outcome.stream {
      case .standardOutput: try? StandardOutput.write(outcome.text)
      case .standardError: try? StandardError.write(outcome.text)
      }
    }
    return outcome.exitCode
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
  private var readerStarted = false
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
    case .names: try? StandardOutput.writeLine(watch.name.rawValue)
    case .verbose:
      let state: String
      do throws(NotifyError) {
        state = String(try await center.state(of: watch.name))
      } catch {
        state = ": Failed with code \(error.status.rawValue)"
      }
      try? StandardOutput.writeLine(
        "[\(token)] \(wallClockStamp()) \(watch.name) \(state) \(watch.mode.typeName)")
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
    if output != .quiet { try? StandardOutput.writeLine("SIGNAL \(number)") }
    await pollChecks { mode in mode == .signal(number) }
  }
}
