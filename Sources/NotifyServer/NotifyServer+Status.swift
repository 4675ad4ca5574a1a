import NotifyCore
import NotifyServerFiles
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

extension NotifyServer {
  /// The status dump `notifyd` writes to its log on `SIGUSR1` (short) and `SIGUSR2`
  /// (detailed), as Darwin's notifyd writes one on those signals; the format is in
  /// `Protocol/notifyd.md`, "Status dump".
  ///
  /// The short dump is the process, the table's size and the counters of
  /// `GetStatistics`; the detailed one adds every access rule and every name with its
  /// state, set time and post count. Names are escaped as in the state file, so each
  /// fits on one line.
  ///
  /// - Parameters:
  ///   - trigger: What asked for it, for the first line (`SIGUSR1`).
  ///   - detailed: Whether to list the rules and names.
  /// - Returns: The lines, without the `notifyd: ` prefix the log adds, the last one
  ///   `status: end`.
  public func statusReport(trigger: String, detailed: Bool) -> [String] {
    let rules = accessPolicy.rules
    let bridges = bridgeStatusLines()
    var lines = state.withLock { state -> [String] in
      let table = state.table
      let uptime = (Self.realtimeNanoseconds() &- state.startTime) / 1_000_000_000
      var lines = [
        "status on \(trigger): pid \(getpid()), up \(uptime) s",
        "status: \(table.count) names (\(table.stateCount) with a state) of at most "
          + "\(configuration.capacity), \(rules.count) access rules, "
          + "\(state.callers.count) cached callers, "
          + "state file \(configuration.store?.path ?? "none")",
        "status: counters " + state.counters.map { "\($0.key) \($0.value)" }.joined(separator: " "),
      ]
      lines += bridges
      guard detailed else { return lines }
      lines += rules.map { "status: rule \($0.origin)" }
      let names = table.sortedEntries
      lines += names.map { name, entry in
        "status: name \(StateFile.escape(name.rawValue)) state \(entry.state) set \(entry.setTime) "
          + "posts \(entry.postCount)"
      }
      return lines
    }
    lines.append("status: end")
    return lines
  }

  /// Writes ``statusReport(trigger:detailed:)`` to the log, a line at a time.
  public func logStatus(trigger: String, detailed: Bool) {
    for line in statusReport(trigger: trigger, detailed: detailed) { configuration.log(line) }
  }
}
