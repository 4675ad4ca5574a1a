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
  /// The directory that holds the socket, the configuration and the lock:
  /// `notifybus` in the user's runtime directory (`$XDG_RUNTIME_DIR`, else
  /// `/run/user/<uid>` when it is the user's), else `/tmp/notifybus-<uid>`.
  public static var directory: String {
    if let runtime = userRuntimeDirectory { return runtime + "/notifybus" }
    return "/tmp/notifybus-\(getuid())"
  }

  /// The path of the bus socket.
  public static var socketPath: String { directory + "/bus" }

  /// The bus address of the embedded bus.
  public static var address: BusAddress { .unixSocket(socketPath) }

  /// Where `.service` files for D-Bus activation on the embedded bus go:
  /// `$NOTIFYBUS_SERVICE_DIR`, else `$XDG_DATA_HOME/notifybus/dbus-1/services`
  /// (`~/.local/share/notifybus/dbus-1/services`).
  public static var serviceDirectory: String {
    if let directory = Environment.value("NOTIFYBUS_SERVICE_DIR") { return directory }
    let dataHome =
      Environment.value("XDG_DATA_HOME")
      ?? ((Environment.homeDirectory ?? "/tmp") + "/.local/share")
    return dataHome + "/notifybus/dbus-1/services"
  }

  /// Makes sure the embedded bus is running and returns its address.
  ///
  /// - Throws: ``DBusError`` when the directory is unsafe or the daemon cannot be
  ///   started; the message says which and why.
  public static func start() throws(DBusError) -> BusAddress {
    let directory = directory
    try makePrivateDirectory(directory)
    let lock = open(directory + "/bus.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard lock >= 0 else { throw ioError("open", directory + "/bus.lock") }
    defer { close(lock) }
    do {
      _ = try retryingOnInterrupt { flock(lock, LOCK_EX) }
    } catch {
      throw DBusError(.ioError, "cannot lock '\(directory)/bus.lock': \(error)")
    }
    defer { flock(lock, LOCK_UN) }
    capLog(directory + "/bus.log")
    if isAnswering(socketPath) {
      provideNotifydService()
      return address
    }

    unlink(socketPath)
    unlink(directory + "/bus.pid")
    try makePrivateDirectory(serviceDirectory, createParents: true)
    provideNotifydService()
    let configuration = directory + "/bus.conf"
    try writeFile(
      configuration,
      contents: BusConfiguration.embedded(
        socketPath: socketPath, serviceDirectory: serviceDirectory))
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
    return address
  }

  /// The daemon's process id, from its pid file, while the file exists.
  package static var processID: Int32? {
    guard let text = try? readFile(directory + "/bus.pid") else { return nil }
    return Int32(text.split(separator: "\n").first ?? "")
  }

  /// Stops the embedded bus if it is running.
  ///
  /// - Returns: Whether a daemon was stopped.
  @discardableResult
  public static func stop() -> Bool {
    guard let pid = processID else { return false }
    let stopped = kill(pid, SIGTERM) == 0
    unlink(directory + "/bus.pid")
    return stopped
  }

  /// The size `bus.log` may reach before ``start()`` moves its contents to `bus.log.1`.
  public static let logLimit = 1 << 20

  /// Keeps the daemon's log under ``logLimit``.
  ///
  /// A larger log is copied to `PATH.1`, replacing the previous one, and emptied in place.
  /// The daemon appends (`O_APPEND`), so its next line lands at the start of the emptied
  /// file.
  static func capLog(_ path: String) {
    var info = stat()
    guard stat(path, &info) == 0, Int(info.st_size) > logLimit,
      let contents = try? readFile(path)
    else { return }
    try? writeFile(path + ".1", contents: contents)
    truncate(path, 0)
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

  /// Creates `path` with mode 0700 if needed and checks that it is a real directory,
  /// owned by this user, that no other user can write or read.
  static func makePrivateDirectory(_ path: String, createParents: Bool = false)
    throws(DBusError)
  {
    if createParents {
      var prefix = ""
      for component in path.split(separator: "/").dropLast() {
        prefix += "/" + component
        mkdir(prefix, 0o700)
      }
    }
    if mkdir(path, 0o700) != 0 && errno != EEXIST { throw ioError("mkdir", path) }
    var info = stat()
    guard lstat(path, &info) == 0 else { throw ioError("lstat", path) }
    guard info.st_mode & S_IFMT == S_IFDIR else {
      throw DBusError(.accessDenied, "'\(path)' is not a directory (a symbolic link is refused)")
    }
    guard info.st_uid == getuid() else {
      throw DBusError(
        .accessDenied, "'\(path)' belongs to uid \(info.st_uid), not to this user (\(getuid()))")
    }
    if info.st_mode & 0o077 != 0 && chmod(path, 0o700) != 0 { throw ioError("chmod", path) }
  }

  static func writeFile(_ path: String, contents: String) throws(DBusError) {
    let temporary = path + ".tmp.\(getpid())"
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard fd >= 0 else { throw ioError("open", temporary) }
    let bytes = Array(contents.utf8)
    let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    guard written == bytes.count, rename(temporary, path) == 0 else {
      unlink(temporary)
      throw ioError("write", path)
    }
  }

  static func readFile(_ path: String) throws(DBusError) -> String {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw ioError("open", path) }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
      let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count <= 0 { break }
      bytes += chunk[..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  private static func ioError(_ call: String, _ path: String) -> DBusError {
    DBusError(.ioError, "'\(call)' failed for '\(path)': \(Errno.current)")
  }
}
