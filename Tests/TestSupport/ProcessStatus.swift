#if canImport(Glibc)
  package import Glibc
#elseif canImport(Musl)
  package import Musl
#endif

/// What `/proc/PID/stat` says of a process: its state, parent and start time.
package struct ProcessStatus: Equatable, Sendable {
  /// The state letter (`R`, `S`, `Z` for a zombie, ...).
  package var state: Character
  /// The parent's process identifier.
  package var parent: pid_t
  /// When it started, in clock ticks since boot: tells a later process with the same
  /// identifier apart.
  package var started: UInt64

  /// The status of `pid`, or `nil` when there is no such process.
  package init?(_ pid: pid_t) {
    // The fields after the command name, which may hold spaces and parentheses: state
    // (field 3 of proc(5)), parent (4), …, start time (22).
    guard let text = readFile("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else {
      return nil
    }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 19, let state = fields[0].first, let parent = pid_t(fields[1]),
      let started = UInt64(fields[19])
    else { return nil }
    (self.state, self.parent, self.started) = (state, parent, started)
  }
}

/// Whether `pid` runs (a zombie does not count).
package func isRunning(_ pid: pid_t) -> Bool {
  ProcessStatus(pid).map { $0.state != "Z" } ?? false
}
