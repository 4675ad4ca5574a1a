import Synchronization
package import SystemSupport

#if canImport(Glibc)
  package import Glibc
#elseif canImport(Musl)
  package import Musl
#endif

/// A `mosquitto` broker of a test's own, on a free 127.0.0.1 port, with a generated
/// configuration in a fresh temporary directory; killed when the value is released.
///
/// ``stop()`` and ``start()`` restart it on the same port (with `persistence`, keeping
/// sessions and retained messages across the restart, as a real broker would).
package final class MosquittoBroker: Sendable {
  /// The temporary directory holding the configuration, log and database.
  package let directory: String
  /// The TCP port on 127.0.0.1.
  package let port: Int
  /// The broker URL, for `notifyd --bridge`.
  package var url: String { "mqtt://127.0.0.1:\(port)" }
  private let daemon: Mutex<Subprocess?>

  /// Whether `mosquitto` is installed, for `.enabled(if:)`.
  package static var isAvailable: Bool {
    access("/usr/sbin/mosquitto", X_OK) == 0 || access("/usr/bin/mosquitto", X_OK) == 0
  }

  /// The path of the broker executable.
  private static var executable: String {
    access("/usr/sbin/mosquitto", X_OK) == 0 ? "/usr/sbin/mosquitto" : "/usr/bin/mosquitto"
  }

  /// Creates a directory, writes the configuration and starts the broker.
  ///
  /// - Parameters:
  ///   - users: User names and passwords; when given, anonymous clients are refused.
  ///   - acl: The text of an ACL file (`user NAME` / `topic read|write|readwrite T`).
  ///   - persistence: Keep sessions and retained messages across ``stop()``/``start()``.
  ///   - extraLines: More lines for `mosquitto.conf`.
  package init(
    users: [String: String] = [:], acl: String? = nil, persistence: Bool = true,
    extraLines: [String] = []
  ) throws {
    var template = Array("/tmp/notifybus-mqtt-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw Errno.current }
    directory = String(cString: made)
    var lines = [
      "log_dest stderr",
      "log_type error",
      "log_type warning",
      "log_type notice",
      "log_type information",
      "connection_messages true",
    ]
    // Started as root, mosquitto would switch to the user `mosquitto`, which cannot read
    // this directory.
    if getuid() == 0 { lines.append("user root") }
    if persistence {
      lines += ["persistence true", "persistence_location \(directory)/", "autosave_interval 1"]
    }
    if users.isEmpty {
      lines.append("allow_anonymous true")
    } else {
      let passwords = directory + "/passwords"
      Self.write(passwords, "")
      for (user, password) in users.sorted(by: { $0.key < $1.key }) {
        let result = try Products.runCommand(
          "/usr/bin/mosquitto_passwd", ["-b", passwords, user, password])
        guard result.status == 0 else {
          throw BrokerError(message: "mosquitto_passwd failed: \(result)")
        }
      }
      lines += ["allow_anonymous false", "password_file \(passwords)"]
    }
    if let acl {
      Self.write(directory + "/acl", acl)
      lines.append("acl_file \(directory)/acl")
    }
    lines += extraLines
    // A port free when it was picked can be taken before mosquitto binds it, by a listener
    // of another process: then the broker exits at once, and another port is tried.
    var attempts = 0
    while true {
      let candidate = try Self.freePort()
      Self.write(
        directory + "/mosquitto.conf",
        (["listener \(candidate) 127.0.0.1"] + lines).joined(separator: "\n") + "\n")
      do {
        let process = try Self.launch(directory: directory, port: candidate)
        port = candidate
        daemon = Mutex(process)
        return
      } catch let error as BrokerError where error.portTaken && attempts < 5 {
        attempts += 1
      } catch {
        Subprocess.removeTree(directory)
        throw error
      }
    }
  }

  deinit {
    stop(signal: SIGKILL)
    Subprocess.removeTree(directory)
  }

  /// Starts the broker again, on its port, after ``stop()``; returns once it accepts
  /// connections.
  package func start() throws {
    try daemon.withLock { slot throws in slot = try Self.launch(directory: directory, port: port) }
  }

  /// Starts mosquitto with the configuration in `directory` and waits until it says it
  /// runs and accepts connections on `port`.
  ///
  /// Only its own log line tells that the listener is this broker: another process's
  /// listener on the port would accept too, while this broker exits with "Address already
  /// in use".
  ///
  /// - Throws: ``BrokerError`` when it exits first (``BrokerError/portTaken`` when its port
  ///   was in use) or does not run within 20 s; what it logged this time is in the message.
  private static func launch(directory: String, port: Int) throws -> Subprocess {
    let logPath = directory + "/mosquitto.log"
    // The log is appended to across restarts: only what this start writes counts.
    let earlier = readFile(logPath)?.utf8.count ?? 0
    let thisStart = {
      String(decoding: (readFile(logPath) ?? "").utf8.dropFirst(earlier), as: UTF8.self)
    }
    let process = try Subprocess.spawn(
      executable, arguments: ["-c", directory + "/mosquitto.conf"], captureOutput: false,
      errorFile: logPath)
    let deadline = MonotonicClock.now + 20_000_000_000
    while MonotonicClock.now < deadline {
      if let ended = process.wait(milliseconds: 20) {
        let log = thisStart()
        let errors = log.split(separator: "\n").filter { $0.contains("Error") }
        throw BrokerError(
          message: "mosquitto exited (\(ended)) before accepting connections on \(port): "
            + "\(errors.joined(separator: "; "))\n\(log)",
          portTaken: log.contains("Address already in use"))
      }
      if thisStart().contains(" running\n") && accepts(port) { return process }
    }
    process.kill(SIGKILL)
    process.wait()
    throw BrokerError(
      message: "mosquitto did not accept connections on \(port) within 20 s:\n" + thisStart())
  }

  /// Stops the broker: `SIGTERM` by default, which saves its database.
  package func stop(signal: CInt = SIGTERM) {
    daemon.withLock { slot in
      guard let process = slot else { return }
      process.kill(signal)
      if process.wait(milliseconds: 10_000) == nil {
        process.kill(SIGKILL)
        process.wait()
      }
      slot = nil
    }
  }

  /// What the broker logged.
  package var log: String {
    (try? Products.runCommand("cat", [directory + "/mosquitto.log"]).output) ?? ""
  }

  /// Runs `mosquitto_pub` against this broker (MQTT 5) with `arguments` after the port.
  package func publish(_ arguments: [String]) throws -> Products.Result {
    try Products.runCommand(
      "/usr/bin/mosquitto_pub", ["-V", "mqttv5", "-h", "127.0.0.1", "-p", String(port)] + arguments)
  }

  /// Starts `mosquitto_sub` against this broker (MQTT 5) with `arguments` after the port.
  package func subscriber(_ arguments: [String]) throws -> Subprocess {
    try Subprocess.spawn(
      "/usr/bin/mosquitto_sub",
      arguments: ["-V", "mqttv5", "-h", "127.0.0.1", "-p", String(port)] + arguments)
  }

  // MARK: - Ports

  /// A TCP port on 127.0.0.1 that was free a moment ago, below the kernel's range of
  /// ephemeral ports.
  ///
  /// A broker that ``stop()`` ended restarts on its port. The kernel's own pick (port 0)
  /// comes from the ephemeral range, from which any outgoing connection on the machine
  /// (another test's client) may take that port meanwhile: mosquitto then fails to start
  /// with "Address already in use". Below the range, only a listener that chose the same
  /// port can.
  ///
  /// No port is handed out twice in one process, so the port of a broker that ``stop()``
  /// ended, or one that a test keeps unbound on purpose, is not another broker's.
  package static func freePort() throws -> Int {
    let ephemeralStart =
      readFile("/proc/sys/net/ipv4/ip_local_port_range")?
      .split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first
      .flatMap { Int($0) } ?? 32768
    let range = 10_000..<max(10_001, ephemeralStart)
    for _ in 0..<200 {
      let port = Int.random(in: range)
      guard handedOut.withLock({ $0.insert(port).inserted }) else { continue }
      if try bindable(port) { return port }
    }
    // Below the range every port was taken: the kernel's pick still works, at the risk above.
    return try boundPort(0)
  }

  /// The ports ``freePort()`` has returned or found taken.
  private static let handedOut = Mutex<Set<Int>>([])

  /// Whether a listener could bind 127.0.0.1:`port` now.
  private static func bindable(_ port: Int) throws -> Bool {
    do {
      _ = try boundPort(port)
      return true
    } catch let error as Errno where error.rawValue == EADDRINUSE {
      return false
    }
  }

  /// Binds a socket to 127.0.0.1:`port` (0: the kernel's pick), closes it, and returns the
  /// port it had.
  private static func boundPort(_ port: Int) throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw Errno.current }
    defer { close(fd) }
    guard withLoopbackAddress(port, { bind(fd, $0, $1) }) == 0 else { throw Errno.current }
    var bound = sockaddr_in()
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &bound) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: bound.sin_port))
  }

  /// Whether something accepts TCP connections on 127.0.0.1:`port`.
  package static func accepts(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return withLoopbackAddress(port) { connect(fd, $0, $1) } == 0
  }

  /// Runs `body` with the address 127.0.0.1:`port` and its length, for `bind` or `connect`.
  package static func withLoopbackAddress<Result>(
    _ port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
  ) -> Result {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
  }

  private static func write(_ path: String, _ text: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    _ = Array(text.utf8).withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    close(fd)
  }
}

/// Why a test broker could not be set up.
package struct BrokerError: Error, CustomStringConvertible {
  package var message: String
  /// Whether mosquitto exited because its port was in use.
  package var portTaken = false
  package var description: String { message }
}
