import CommandLineSupport
import DBus
import Notify
import NotifyToolsCore

/// Connects, turning a failure into a runtime error (exit 1).
func connect(_ bus: Bus) async throws(ToolError) -> NotifyCenter {
  do {
    return try await NotifyCenter.connect(to: bus)
  } catch {
    throw ToolError(.busUnreachable, error.message, cause: error)
  }
}

/// Seconds and milliseconds of the wall clock, as `sec.mmm` (notifyutil's `-v` format).
func wallClockStamp() -> String {
  var spec = timespec()
  clock_gettime(CLOCK_REALTIME, &spec)
  let milliseconds = (spec.tv_nsec + 500_000) / 1_000_000
  let seconds = spec.tv_sec + (milliseconds >= 1000 ? 1 : 0)
  let fraction = milliseconds % 1000
  let padded = fraction < 10 ? "00\(fraction)" : fraction < 100 ? "0\(fraction)" : "\(fraction)"
  return "\(seconds).\(padded)"
}

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif
