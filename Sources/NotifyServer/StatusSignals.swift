import Dispatch

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Calls a handler on each `SIGUSR1` (`detailed` false) and `SIGUSR2` (`detailed` true)
/// until cancelled; the signals no longer end the process.
///
/// `notifyd` answers them with ``NotifyServer/logStatus(trigger:detailed:)``, as Darwin's
/// notifyd writes its status dump on those signals. Create it before the service is
/// visible on the bus, so that no signal finds the default action.
public final class StatusSignals {
  private let sources: [any DispatchSourceSignal]

  /// Starts watching; `handler` runs on a private serial queue with the signal's name
  /// (`SIGUSR1`, `SIGUSR2`) and whether a detailed dump is asked for.
  public init(_ handler: @escaping @Sendable (_ signal: String, _ detailed: Bool) -> Void) {
    let queue = DispatchQueue(label: "notifyd.status")
    sources = [(SIGUSR1, "SIGUSR1", false), (SIGUSR2, "SIGUSR2", true)].map {
      number, name, detailed in
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
      source.setEventHandler { handler(name, detailed) }
      source.resume()
      return source
    }
  }

  /// Stops calling the handler; the signals stay ignored.
  public func cancel() {
    for source in sources { source.cancel() }
  }
}
