import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Where `notifyd` writes its log lines (`notifyd: <line>`).
///
/// - Started by systemd (`INVOCATION_ID` or `JOURNAL_STREAM` set): standard error, which
///   systemd sends to the journal.
/// - Started by a bus's D-Bus activation (`DBUS_STARTER_ADDRESS` set), not by systemd: the
///   file ``defaultFilePath`` (`$XDG_STATE_HOME/notifybus/notifyd.log`), each line stamped
///   with the UTC time and the pid, at most ``limit`` bytes: a longer file becomes
///   `notifyd.log.1` (replacing it) and a new one is started. Standard error points at the
///   file too, so a crash report lands there.
/// - Otherwise (run by hand): standard error.
public final class NotifydLog: Sendable {
  /// How large the log file grows before it is moved to `notifyd.log.1`.
  public static let limit = 1 << 20

  /// The log file, when lines go to one.
  public let filePath: String?
  private let descriptor: Mutex<CInt>

  private init(filePath: String?, descriptor: CInt) {
    self.filePath = filePath
    self.descriptor = Mutex(descriptor)
  }

  /// Standard error.
  public static let standardError = NotifydLog(filePath: nil, descriptor: 2)

  /// The log for this process, chosen from its environment as described above.
  ///
  /// When the file cannot be opened, the log is standard error, and its first line says
  /// why.
  public static func forThisProcess() -> NotifydLog {
    let bySystemd =
      Environment.value("INVOCATION_ID") != nil || Environment.value("JOURNAL_STREAM") != nil
    guard !bySystemd, Environment.value("DBUS_STARTER_ADDRESS") != nil,
      let path = defaultFilePath
    else { return standardError }
    do throws(Errno) {
      let log = NotifydLog(filePath: path, descriptor: try openFile(path))
      log.redirectStandardError()
      return log
    } catch {
      standardError.write("cannot open the log file \(path): \(error); logging to standard error")
      return standardError
    }
  }

  /// `$XDG_STATE_HOME/notifybus/notifyd.log`, else `~/.local/state/notifybus/notifyd.log`.
  public static var defaultFilePath: String? {
    guard let state = StateStore.defaultPath else { return nil }
    return String(state.dropLast("notifyd.state".count)) + "notifyd.log"
  }

  /// Writes one line.
  public func write(_ line: String) {
    guard let filePath else {
      writeAll(2, Array("notifyd: \(line)\n".utf8))
      return
    }
    let text = Array("\(Self.timestamp()) notifyd[\(getpid())]: \(line)\n".utf8)
    descriptor.withLock { fd in
      var info = stat()
      if fstat(fd, &info) == 0, Int(info.st_size) + text.count > Self.limit,
        rename(filePath, filePath + ".1") == 0, let fresh = try? Self.openFile(filePath)
      {
        close(fd)
        fd = fresh
        dup2(fd, 2)
      }
      writeAll(fd, text)
    }
  }

  /// The log as the closure ``NotifyServer/Configuration/log`` takes.
  public var writer: @Sendable (String) -> Void { { [self] line in write(line) } }

  private func redirectStandardError() {
    descriptor.withLock { fd in _ = dup2(fd, 2) }
  }

  /// Opens `path` for appending, creating it (mode 0600) and its directories (0700).
  private static func openFile(_ path: String) throws(Errno) -> CInt {
    var current = ""
    for component in path.split(separator: "/").dropLast() {
      current += "/" + component
      mkdir(current, 0o700)
    }
    let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    guard fd >= 0 else { throw Errno.current }
    return fd
  }

  /// `2026-12-01T09:18:06.123Z`.
  static func timestamp() -> String {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    var seconds = now.tv_sec
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    let milliseconds = Int(now.tv_nsec / 1_000_000)
    let fraction = String(milliseconds + 1000).dropFirst()
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
      + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(fraction)Z"
  }
}

/// Writes `bytes` to `fd`, ignoring failures: a log line that cannot be written is lost.
private func writeAll(_ fd: CInt, _ bytes: [UInt8]) {
  _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
}
