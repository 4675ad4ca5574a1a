import ComposeSheet
import Dispatch
import HandoffExamples
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// The compose sheet on a terminal in raw mode: the thin I/O around ``ComposeSheet``.
///
/// It switches the terminal to raw mode, the alternate screen and bracketed paste, draws the
/// sheet after every key, tick and resize, and restores the terminal on every way out:
/// Post, Cancel, an error, end of input, and SIGINT, SIGTERM, SIGHUP and SIGQUIT (restored,
/// then the signal's default action).
final class TerminalComposer: ShareComposer {
  private let input: CInt
  private let output: CInt
  private let ownsDescriptor: Bool

  private init(input: CInt, output: CInt, ownsDescriptor: Bool) {
    self.input = input
    self.output = output
    self.ownsDescriptor = ownsDescriptor
  }

  deinit { if ownsDescriptor { close(input) } }

  /// The terminal of the standard streams when both are one; with `forced`, else `/dev/tty`.
  static func open(forced: Bool) throws -> (any ShareComposer)? {
    if isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 {
      return TerminalComposer(input: STDIN_FILENO, output: STDOUT_FILENO, ownsDescriptor: false)
    }
    guard forced else { return nil }
    let fd = Glibc.open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
    guard fd >= 0, isatty(fd) == 1 else {
      throw TerminalError(
        "no terminal: standard input and output are not one, and /dev/tty cannot be opened ("
          + String(cString: strerror(errno)) + ")")
    }
    return TerminalComposer(input: fd, output: fd, ownsDescriptor: true)
  }

  func compose(
    heading: String, text: String,
    load: @escaping @Sendable () async throws -> ComposeSheet.Preview
  ) async throws -> ComposeSheet.Outcome {
    let loaded = LoadResult()
    let loader = Task {
      do {
        let preview = try await load()
        loaded.set(.success(preview))
      } catch {
        loaded.set(.failure(error))
      }
    }
    defer { loader.cancel() }
    let sheet = ComposeSheet(heading: heading, text: text)
    return try await withCheckedThrowingContinuation { continuation in
      // The loop blocks in poll(2): on a thread of its own, not the concurrency pool's.
      DispatchQueue.global().async {
        continuation.resume(with: Result { try self.run(sheet, loaded: loaded) })
      }
    }
  }

  /// The loop: draw, wait for a key or a tick, handle it, until the sheet ends.
  private func run(_ initial: ComposeSheet, loaded: LoadResult) throws -> ComposeSheet.Outcome {
    var sheet = initial
    let saved = try enterRawMode()
    defer { leaveRawMode(saved) }
    var decoder = TerminalKeyDecoder()
    var drawn: (Screen, Int, Int)?
    var buffer = [UInt8](repeating: 0, count: 1024)
    while true {
      if sheet.isLoading, let result = loaded.get() {
        sheet.finishLoading(try result.get())
      }
      if let outcome = sheet.outcome { return outcome }
      let (width, height) = size()
      let screen = sheet.render(width: width, height: height)
      if drawn.map({ $0.0 != screen || $0.1 != width || $0.2 != height }) ?? true {
        write(screen.ansi)
        drawn = (screen, width, height)
      }
      var descriptor = pollfd(fd: input, events: Int16(POLLIN), revents: 0)
      let wait: CInt = decoder.hasPending ? 40 : sheet.isLoading ? 100 : 250
      let ready = poll(&descriptor, 1, wait)
      if ready < 0 && errno == EINTR { continue }
      if ready > 0 {
        let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
        if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
        // End of input, or the terminal went away: nothing was posted.
        guard count > 0 else { return .cancel }
        for key in decoder.decode(buffer[..<count]) { sheet.handle(key) }
      } else {
        for key in decoder.flush() { sheet.handle(key) }
        if sheet.isLoading { sheet.tick() }
      }
    }
  }

  private func size() -> (Int, Int) {
    var size = winsize()
    guard ioctl(output, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else {
      return (80, 24)
    }
    return (Int(size.ws_col), Int(size.ws_row))
  }

  private func write(_ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
      let written = bytes.withUnsafeBytes { Glibc.write(output, $0.baseAddress, $0.count) }
      if written < 0 && errno == EINTR { continue }
      guard written > 0 else { return }
      bytes = bytes.dropFirst(written)
    }
  }

  // MARK: Raw mode, and its restoration on signals

  private static let enterSequence = "\u{1B}[?1049h\u{1B}[?2004h"
  private static let handledSignals = [SIGINT, SIGTERM, SIGHUP, SIGQUIT]

  private func enterRawMode() throws -> termios {
    var saved = termios()
    guard tcgetattr(input, &saved) == 0 else {
      throw TerminalError(
        "cannot read the terminal's settings: " + String(cString: strerror(errno)))
    }
    var raw = saved
    raw.c_iflag &= ~tcflag_t(IXON | ICRNL | INLCR | IGNCR | ISTRIP | BRKINT)
    raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG | IEXTEN)
    withUnsafeMutableBytes(of: &raw.c_cc) { cc in
      cc[Int(VMIN)] = 1
      cc[Int(VTIME)] = 0
    }
    TerminalRestore.arm(fd: input, output: output, saved: saved)
    for signal in Self.handledSignals { TerminalRestore.install(signal) }
    guard tcsetattr(input, TCSAFLUSH, &raw) == 0 else {
      let reason = String(cString: strerror(errno))
      TerminalRestore.disarm()
      throw TerminalError("cannot switch the terminal to raw mode: " + reason)
    }
    write(Self.enterSequence)
    return saved
  }

  private func leaveRawMode(_ saved: termios) {
    TerminalRestore.restore()
    TerminalRestore.disarm()
  }
}

/// A failure to use the terminal.
struct TerminalError: Error, CustomStringConvertible {
  let description: String
  init(_ description: String) { self.description = description }
}

/// The providers' load result, handed from the loading task to the terminal loop.
private final class LoadResult: Sendable {
  private let value = Mutex<Result<ComposeSheet.Preview, any Error>?>(nil)
  func set(_ result: Result<ComposeSheet.Preview, any Error>) { value.withLock { $0 = result } }
  func get() -> Result<ComposeSheet.Preview, any Error>? { value.withLock { $0 } }
}

/// What a signal handler needs to put the terminal back, set before any handler is
/// installed: plain memory and async-signal-safe calls only (tcsetattr, write, signal, raise).
private enum TerminalRestore {
  nonisolated(unsafe) static var descriptor: CInt = -1
  nonisolated(unsafe) static var outputDescriptor: CInt = -1
  nonisolated(unsafe) static let settings = UnsafeMutablePointer<termios>.allocate(capacity: 1)
  nonisolated(unsafe) static let leave: UnsafeMutableBufferPointer<UInt8> = {
    let bytes = Array("\u{1B}[?2004l\u{1B}[?1049l\u{1B}[?25h".utf8)
    let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: bytes.count)
    _ = buffer.initialize(from: bytes)
    return buffer
  }()
  nonisolated(unsafe) static var previous: [CInt: sigaction] = [:]

  static func arm(fd: CInt, output: CInt, saved: termios) {
    _ = leave
    settings.pointee = saved
    outputDescriptor = output
    descriptor = fd
  }

  static func install(_ signal: CInt) {
    var action = sigaction()
    action.__sigaction_handler.sa_handler = restoreAndResignal
    sigemptyset(&action.sa_mask)
    var old = sigaction()
    sigaction(signal, &action, &old)
    previous[signal] = old
  }

  /// Puts the terminal back (safe to call twice).
  static func restore() {
    guard descriptor >= 0 else { return }
    _ = Glibc.write(outputDescriptor, leave.baseAddress, leave.count)
    tcsetattr(descriptor, TCSAFLUSH, settings)
  }

  static func disarm() {
    descriptor = -1
    for (signal, action) in previous {
      var old = action
      sigaction(signal, &old, nil)
    }
    previous = [:]
  }
}

/// The handler of the signals that end the process: restore, then die of the signal.
private func restoreAndResignal(_ signal: CInt) {
  TerminalRestore.restore()
  Glibc.signal(signal, SIG_DFL)
  raise(signal)
}
