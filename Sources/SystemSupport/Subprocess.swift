import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A child process started with `posix_spawn`, with optional pipes for its output.
///
/// Children start with an empty signal mask and default dispositions, so they can be
/// stopped with `SIGTERM` even when the parent's thread had signals blocked (Foundation's
/// `Process` passes the Dispatch thread's mask on). Its standard input is `/dev/null`.
package final class Subprocess {
  /// How a child process ended.
  package enum Termination: Equatable, Sendable, CustomStringConvertible {
    /// The process called `exit` with this status.
    case exited(CInt)
    /// The process was ended by this signal.
    case signaled(CInt)

    package var description: String {
      switch self {
      case .exited(let code): "exit status \(code)"
      case .signaled(let signal): "signal \(signal)"
      }
    }
  }

  /// The child's process identifier.
  package let pid: Int32
  /// The read end of the pipe connected to the child's standard output, if captured.
  package private(set) var outputDescriptor: CInt?
  /// The read end of the pipe connected to the child's standard error, if captured.
  package private(set) var errorDescriptor: CInt?
  private var termination: Termination?
  private var outputBuffer: [UInt8] = []

  /// The children started and not reaped yet, for ``killUnreaped(_:)``.
  ///
  /// A child is reaped, and leaves the set, under its lock, which ``killUnreaped(_:)``
  /// signals under: a process identifier in the set is still the child's.
  private static let unreaped = Mutex<Set<Int32>>([])

  private init(pid: Int32, output: CInt?, error: CInt?) {
    self.pid = pid
    self.outputDescriptor = output
    self.errorDescriptor = error
  }

  deinit {
    if let outputDescriptor { close(outputDescriptor) }
    if let errorDescriptor { close(errorDescriptor) }
  }

  /// Starts `executable`, looked up in `PATH` when it contains no slash.
  ///
  /// - Parameters:
  ///   - executable: A path or a command name.
  ///   - arguments: The arguments after the program name.
  ///   - environment: The complete environment, or `nil` to inherit this process's.
  ///   - captureOutput: Whether to connect standard output to a pipe.
  ///   - captureError: Whether to connect standard error to a pipe.
  ///   - errorFile: A file to append standard error to, when it is not captured;
  ///     otherwise it is inherited.
  /// - Throws: ``Errno`` when the process cannot be started.
  package static func spawn(
    _ executable: String,
    arguments: [String],
    environment: [String: String]? = nil,
    captureOutput: Bool = true,
    captureError: Bool = false,
    errorFile: String? = nil
  ) throws(Errno) -> Subprocess {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }

    var noSignals = sigset_t()
    sigemptyset(&noSignals)
    posix_spawnattr_setsigmask(&attributes, &noSignals)
    var defaults = sigset_t()
    sigemptyset(&defaults)
    for signal in [SIGTERM, SIGINT, SIGPIPE, SIGHUP, SIGCHLD] { sigaddset(&defaults, signal) }
    posix_spawnattr_setsigdefault(&attributes, &defaults)
    posix_spawnattr_setflags(
      &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    var outputPipe: [CInt] = [-1, -1]
    var errorPipe: [CInt] = [-1, -1]
    func closeAll() {
      for fd in outputPipe + errorPipe where fd >= 0 { close(fd) }
    }
    if captureOutput {
      guard makePipe(&outputPipe) else { throw Errno.current }
      posix_spawn_file_actions_adddup2(&actions, outputPipe[1], 1)
    }
    if captureError {
      guard makePipe(&errorPipe) else {
        let error = Errno.current
        closeAll()
        throw error
      }
      posix_spawn_file_actions_adddup2(&actions, errorPipe[1], 2)
    } else if let errorFile {
      // No O_CLOEXEC: glibc closes fd 2 first, so the file opens as fd 2 itself and
      // would be closed again by the exec.
      posix_spawn_file_actions_addopen(&actions, 2, errorFile, O_WRONLY | O_CREAT | O_APPEND, 0o600)
    }

    let argv = [executable] + arguments
    var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
    var cEnvironment: [UnsafeMutablePointer<CChar>?]? =
      environment.map { env in env.map { strdup("\($0.key)=\($0.value)") } + [nil] }
    defer {
      for pointer in cArguments { free(pointer) }
      for pointer in cEnvironment ?? [] { free(pointer) }
    }

    var pid: pid_t = 0
    let status: CInt
    if var cEnvironmentValue = cEnvironment {
      status = posix_spawnp(
        &pid, executable, &actions, &attributes, &cArguments, &cEnvironmentValue)
      cEnvironment = cEnvironmentValue
    } else {
      status = posix_spawnp(&pid, executable, &actions, &attributes, &cArguments, environ)
    }
    if captureOutput { close(outputPipe[1]) }
    if captureError { close(errorPipe[1]) }
    guard status == 0 else {
      if captureOutput { close(outputPipe[0]) }
      if captureError { close(errorPipe[0]) }
      throw Errno(rawValue: status)
    }
    unreaped.withLock { _ = $0.insert(pid) }
    return Subprocess(
      pid: pid,
      output: captureOutput ? outputPipe[0] : nil,
      error: captureError ? errorPipe[0] : nil)
  }

  /// Sends `signal` to every child this process started and has not reaped.
  ///
  /// For a program interrupted while its children run: a benchmark stopped with Ctrl-C
  /// would otherwise leave its private `dbus-daemon`s running, each holding inotify
  /// instances of the user's 128 (a later test then failed with `EMFILE`). A child not
  /// reaped keeps its process identifier, so no other process gets the signal.
  package static func killUnreaped(_ signal: CInt = SIGKILL) {
    unreaped.withLock { children in
      for pid in children { _ = systemKill(pid, signal) }
    }
  }

  /// Reaps the child if it has ended (`WNOHANG`) or once it ends; `nil` while it runs.
  private func reap(_ options: CInt) -> Termination? {
    var status: CInt = 0
    let reaped = Self.unreaped.withLock { children -> Bool in
      var result: pid_t
      repeat { result = waitpid(pid, &status, options) } while result == -1 && errno == EINTR
      guard result == pid else { return false }
      children.remove(pid)
      return true
    }
    guard reaped else { return nil }
    termination = Self.decode(status)
    return termination
  }

  /// Creates a pipe whose ends close on exec.
  private static func makePipe(_ ends: inout [CInt]) -> Bool {
    guard pipe(&ends) == 0 else { return false }
    for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return true
  }

  /// Sends `signal` to the child, unless it has already been reaped.
  package func kill(_ signal: CInt = SIGKILL) {
    guard termination == nil else { return }
    _ = systemKill(pid, signal)
  }

  /// Waits for the child to end and reaps it.
  @discardableResult
  package func wait() -> Termination {
    if let termination { return termination }
    // Waits for the end without reaping, so that the reaping, under the lock, is at once.
    var info = siginfo_t()
    while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1 && errno == EINTR {}
    if let ended = reap(0) { return ended }
    // Reaped elsewhere (a `waitpid(-1)`): how it ended is unknown.
    Self.unreaped.withLock { _ = $0.remove(pid) }
    termination = .exited(-1)
    return .exited(-1)
  }

  /// Waits at most `milliseconds` for the child to end.
  ///
  /// - Returns: How it ended, or `nil` if it is still running.
  package func wait(milliseconds: Int) -> Termination? {
    if let termination { return termination }
    let deadline = MonotonicClock.now + milliseconds * 1_000_000
    while true {
      if let ended = reap(WNOHANG) { return ended }
      if MonotonicClock.now >= deadline { return nil }
      usleep(2_000)
    }
  }

  /// Reads one line of standard output (without its newline).
  ///
  /// - Parameter milliseconds: How long to wait for the line to complete.
  /// - Returns: The line, or `nil` at end of file or when time runs out.
  package func readLine(milliseconds: Int) -> String? {
    guard let fd = outputDescriptor else { return nil }
    let deadline = MonotonicClock.now + milliseconds * 1_000_000
    while true {
      if let newline = outputBuffer.firstIndex(of: UInt8(ascii: "\n")) {
        let line = String(decoding: outputBuffer[..<newline], as: UTF8.self)
        outputBuffer.removeSubrange(...newline)
        return line
      }
      let remaining = (deadline - MonotonicClock.now) / 1_000_000
      guard remaining > 0, Self.read(fd, into: &outputBuffer, milliseconds: remaining) else {
        return nil
      }
    }
  }

  /// Reads standard output and standard error until both reach end of file or time runs
  /// out.
  ///
  /// - Returns: What was read from each, decoded as UTF-8.
  package func readToEnd(milliseconds: Int) -> (output: String, error: String) {
    var error: [UInt8] = []
    let deadline = MonotonicClock.now + milliseconds * 1_000_000
    var open = [outputDescriptor, errorDescriptor].compactMap { $0 }
    while !open.isEmpty {
      let remaining = (deadline - MonotonicClock.now) / 1_000_000
      guard remaining > 0 else { break }
      var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
      let ready = poll(&fds, nfds_t(fds.count), CInt(clamping: remaining))
      if ready < 0 && errno == EINTR { continue }
      guard ready > 0 else { break }
      for entry in fds where entry.revents != 0 {
        let isOutput = entry.fd == outputDescriptor
        let gotData =
          isOutput
          ? Self.read(entry.fd, into: &outputBuffer, milliseconds: 0)
          : Self.read(entry.fd, into: &error, milliseconds: 0)
        if !gotData { open.removeAll { $0 == entry.fd } }
      }
    }
    let output = String(decoding: outputBuffer, as: UTF8.self)
    outputBuffer.removeAll()
    return (output, String(decoding: error, as: UTF8.self))
  }

  /// Reads what is available on `fd` into `buffer`, waiting up to `milliseconds`.
  ///
  /// - Returns: `false` at end of file, on error, or when nothing arrived in time.
  private static func read(_ fd: CInt, into buffer: inout [UInt8], milliseconds: Int) -> Bool {
    var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    let ready = poll(&entry, 1, CInt(clamping: milliseconds))
    guard ready > 0 else { return ready < 0 && errno == EINTR }
    var chunk = [UInt8](repeating: 0, count: 4096)
    let count = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
    guard count > 0 else { return count < 0 && errno == EINTR }
    buffer.append(contentsOf: chunk[..<count])
    return true
  }

  private static func decode(_ status: CInt) -> Termination {
    // The <sys/wait.h> macros are not imported; these are their definitions.
    let signal = status & 0x7f
    return signal == 0 ? .exited((status >> 8) & 0xff) : .signaled(signal)
  }
}

/// `CLOCK_MONOTONIC` in nanoseconds, comparable across processes on one machine.
package enum MonotonicClock {
  /// The current time in nanoseconds.
  package static var now: Int {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return spec.tv_sec * 1_000_000_000 + spec.tv_nsec
  }
}

extension Subprocess {
  /// Removes a directory tree with `rm -rf`, for test and temporary directories.
  package static func removeTree(_ path: String) {
    guard isTemporary(path) else { return }
    if let process = try? spawn("rm", arguments: ["-rf", path], captureOutput: false) {
      process.wait()
    }
  }

  /// Starts removing a directory tree as ``removeTree(_:)`` does, without waiting for it.
  ///
  /// `sh` starts `rm` in the background and exits at once, so only `sh` is waited for;
  /// `rm` finishes on its own, even when this process ends first, and init reaps it. For a
  /// release that may run on one of the Swift pool's few threads, which a slow disk would
  /// otherwise hold.
  package static func startRemovingTree(_ path: String) {
    guard isTemporary(path) else { return }
    let starter = try? spawn(
      "sh", arguments: ["-c", "rm -rf -- \"$0\" &", path], captureOutput: false)
    starter?.wait()
  }

  private static func isTemporary(_ path: String) -> Bool {
    path.hasPrefix("/tmp/") || path.hasPrefix("/var/tmp/")
  }
}
