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

  init() throws {
    var template = Array("/tmp/notifybus-bench-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw Errno.current }
    directory = String(cString: made)
    let configuration = directory + "/bus.conf"
    let text = BusConfiguration.embedded(
      socketPath: directory + "/bus", serviceDirectory: directory, pidFile: directory + "/bus.pid")
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
