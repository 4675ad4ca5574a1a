public import DBusCodec
public import DBusMessages
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The per-user bus NotifyBus starts itself when no other bus answers, so everything
/// works on a bare server with no desktop session.
///
/// It is a real `dbus-daemon` with a generated configuration, listening at
/// ``socketPath`` (`$XDG_RUNTIME_DIR/notifybus/bus`, or `/tmp/notifybus-<uid>/bus` when
/// `XDG_RUNTIME_DIR` is unset). The directory is created with mode 0700 and must belong
/// to the user. Starting is serialized with `flock` on `bus.lock` in that directory, so
/// when several processes start at once exactly one daemon results; later processes
/// find it answering and reuse it. The daemon runs until it is killed, like a session
/// bus; ``stop()`` ends it.
///
/// The configuration allows D-Bus activation from ``serviceDirectory`` and from the
/// standard session service directories. The daemon's own messages go to `bus.log` in
/// the directory.
public enum EmbeddedBus {
  /// The directory that holds the socket, the configuration and the lock.
  public static var directory: String {
    if let runtime = userRuntimeDirectory { return runtime + "/notifybus" }
    return "/tmp/notifybus-\(geteuid())"
  }

  /// The path of the bus socket.
  public static var socketPath: String { directory + "/bus" }

  /// The bus address of the embedded bus.
  public static var address: BusAddress { .unixSocket(socketPath) }

  /// Where `.service` files for D-Bus activation on the embedded bus go:
  /// `$NOTIFYBUS_SERVICE_DIR`, else `$XDG_DATA_HOME/notifybus/dbus-1/services`
  /// (`~/.local/share/notifybus/dbus-1/services`).
  ///
  /// Without a home directory, it is `services` in ``directory``.
  public static var serviceDirectory: String {
    if let directory = Environment.value("NOTIFYBUS_SERVICE_DIR") { return directory }
    guard let dataHome = BaseDirectories().dataHome else { return directory + "/services" }
    return dataHome + "/notifybus/dbus-1/services"
  }

  /// Makes sure the embedded bus is running and returns its address.
  ///
  /// - Throws: ``DBusError`` when the directory is unsafe or the daemon cannot be
  ///   started; the message says which and why.
  public static func start() throws(DBusError) -> BusAddress {
    let directory = directory
    let open = try openPrivateDirectory(directory)
    let lock = try lockFile(in: open)
    defer { lock.unlock() }
    capLog(in: open)
    if isAnswering(socketPath) {
      provideNotifydService()
      return address
    }

    try? open.remove("bus")
    try? open.remove("bus.pid")
    _ = try openPrivateDirectory(serviceDirectory)
    provideNotifydService()
    let configuration = directory + "/bus.conf"
    do {
      try open.replaceFile(
        "bus.conf",
        with: Array(
          BusConfiguration.embedded(socketPath: socketPath, serviceDirectory: serviceDirectory)
            .utf8))
    } catch {
      throw DBusError(.ioError, "cannot write the embedded bus's configuration: \(error)")
    }
    let daemon = Environment.value("NOTIFYBUS_DBUS_DAEMON") ?? "dbus-daemon"
    // With --fork, dbus-daemon points its standard error at /dev/null unless
    // DBUS_DEBUG_OUTPUT is set; set, it keeps bus.log, which also collects what activated
    // services write to theirs.
    var environment = Environment.all
    environment["DBUS_DEBUG_OUTPUT"] = "1"
    let process: Subprocess
    do {
      process = try Subprocess.spawn(
        daemon, arguments: ["--config-file=" + configuration, "--fork", "--print-address=1"],
        environment: environment, errorFile: directory + "/bus.log")
    } catch {
      throw DBusError(
        .spawnFailed,
        "cannot start '\(daemon)' for the embedded bus: \(error); install it with "
          + "'apt-get install dbus-daemon'")
    }
    let line = process.readLine(milliseconds: 10_000)
    let termination = process.wait(milliseconds: 10_000)
    guard line != nil, termination == .exited(0) else {
      process.kill()
      throw DBusError(
        .spawnFailed,
        "'\(daemon) --config-file=\(configuration)' did not start the embedded bus ("
          + (termination.map { "\($0)" } ?? "no answer in 10 s") + ")")
    }
    guard isAnswering(socketPath) else {
      throw DBusError(.noServer, "the embedded bus started but does not answer at \(socketPath)")
    }
    // The daemon writes its pid file under the umask it was started with (the
    // configuration keeps it); every file NotifyBus creates is 0600.
    if let pidFile = try? open.openFile("bus.pid", flags: O_RDONLY) {
      try? pidFile.setPermissions(0o600)
    }
    return address
  }

  /// Stops the embedded bus if it is running.
  ///
  /// - Returns: Whether a daemon was stopped.
  @discardableResult
  public static func stop() -> Bool {
    guard let pid = processID else { return false }
    let stopped = kill(pid, SIGTERM) == 0
    try? Directory<FileSystemError>.openPrivate(directory).remove("bus.pid")
    return stopped
  }

  /// The daemon's process id, from its pid file, while the file exists.
  package static var processID: Int32? {
    guard let open = try? Directory<FileSystemError>.openPrivate(directory),
      let file = try? open.openFile("bus.pid", flags: O_RDONLY),
      let bytes = try? file.readToEnd(limit: 64)
    else { return nil }
    return Int32(String(decoding: bytes, as: UTF8.self).split(separator: "\n").first ?? "")
  }

  /// The size `bus.log` may reach before ``start()`` moves its contents to `bus.log.1`.
  public static let logLimit = 1 << 20

  /// Keeps the daemon's log under ``logLimit``.
  ///
  /// A larger log is copied to `bus.log.1`, replacing the previous one, and emptied in
  /// place. The daemon appends (`O_APPEND`), so its next line lands at the start of the
  /// emptied file.
  static func capLog(in directory: borrowing Directory<FileSystemError>) {
    guard let size = try? directory.status(of: "bus.log")?.st_size, Int(size) > logLimit,
      let log = try? directory.openFile("bus.log", flags: O_RDWR),
      let bytes = try? log.readToEnd(limit: Int(size) + logLimit)
    else { return }
    try? directory.replaceFile("bus.log.1", with: bytes)
    try? log.truncate(to: 0)
  }

  /// Whether something accepts connections on the Unix socket at `path`.
  package static func isAnswering(_ path: String) -> Bool {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: bytes)
      raw[bytes.count] = 0
    }
    let result = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    return result == 0
  }

  /// Opens and locks `bus.lock`, waiting for another process's start (BusConnection
  /// calls this on its own thread, not the concurrency pool).
  private static func lockFile(in directory: borrowing Directory<FileSystemError>)
    throws(DBusError) -> FileDescriptor<FileSystemError>
  {
    do {
      let lock = try directory.openFile("bus.lock", flags: O_RDWR, create: true)
      _ = try lock.lock(exclusive: true, wait: true)
      return lock
    } catch {
      throw DBusError(.ioError, "cannot lock the embedded bus: \(error)")
    }
  }

  /// Creates `path` and its missing parents with mode 0700 if needed (``Directory/openPrivate(_:)``:
  /// no symbolic link, owned by this user) and makes sure no other user can read it.
  static func openPrivateDirectory(_ path: String) throws(DBusError)
    -> Directory<FileSystemError>
  {
    do {
      let open = try Directory<FileSystemError>.openPrivate(path)
      if try open.descriptor.status().st_mode & 0o077 != 0 {
        try open.descriptor.setPermissions(0o700)
      }
      return open
    } catch {
      throw DBusError(.accessDenied, "cannot use the embedded bus's directory: \(error)")
    }
  }

}
