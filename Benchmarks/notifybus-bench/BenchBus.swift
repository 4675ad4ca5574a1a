import DBus
import SystemSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A private `dbus-daemon` for one benchmark suite, in a temporary directory.
final class BenchBus {
  let directory: String
  let address: BusAddress
  private let daemon: Subprocess

  /// The daemon's process id.
  var pid: pid_t { daemon.pid }

  /// Starts a daemon with the embedded bus's configuration but `outgoingLimit` bytes
  /// queued per connection.
  init(outgoingLimit: Int = 1_000_000_000) throws {
    var template = Array("/tmp/notifybus-bench-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw Errno.current }
    directory = String(cString: made)
    let configuration = directory + "/bus.conf"
    // The throughput benchmarks send as fast as they can, with no flow control, and count
    // every delivery, for NotifyBus and its C baseline alike: the embedded bus's 1 MiB per
    // receiver would drop part of a flood to a receiver that falls behind, so by default
    // they run with the session bus's 1 GB.
    let text = BusConfiguration.embedded(
      socketPath: directory + "/bus", serviceDirectory: directory, pidFile: directory + "/bus.pid",
      outgoingLimit: outgoingLimit)
    try Directory<FileSystemError>.openPrivate(directory).replaceFile(
      "bus.conf", with: Array(text.utf8))
    daemon = try Subprocess.spawn(
      "dbus-daemon",
      arguments: ["--config-file=" + configuration, "--nofork", "--print-address=1"],
      errorFile: directory + "/bus.log")
    guard daemon.readLine(milliseconds: 10_000) != nil else {
      throw DBusError(.spawnFailed, "dbus-daemon did not start")
    }
    address = .unixSocket(directory + "/bus")
  }

  deinit {
    daemon.kill()
    daemon.wait()
    Subprocess.removeTree(directory)
  }
}
