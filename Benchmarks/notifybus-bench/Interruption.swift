import Dispatch
import SystemSupport

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

/// What the benchmark does when it is stopped by a signal.
enum Interruption {
  /// Makes Ctrl-C, `TERM` and `HUP` end the benchmark's children (its private buses and
  /// brokers, notifyd, its own child roles) before it ends, with 128 + the signal's number.
  ///
  /// The handlers run on a global queue, not the main actor, which a suite may keep busy.
  ///
  /// - Returns: The signal sources, which must live as long as the program.
  static func endChildrenOnStop() -> [any DispatchSourceSignal] {
    [SIGINT, SIGTERM, SIGHUP].map { number in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler {
        Subprocess.killUnreaped()
        _exit(128 + number)
      }
      source.activate()
      return source
    }
  }
}
