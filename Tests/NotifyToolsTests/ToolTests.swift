import BusTestSupport
import CommandLineSupport
import DBus
import Glibc
import NotifyTools
import NotifyToolsCore
import SystemSupport
import Testing

@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct ToolTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  var environment: [String: String] {
    ["NOTIFYBUS_BUS_ADDRESS": bus.address.rawValue, "DBUS_SESSION_BUS_ADDRESS": ""]
  }

  /// Starts a tool in the background with its output captured.
  func start(_ tool: String, _ arguments: [String]) throws -> Subprocess {
    var merged = Products.currentEnvironment()
    for (key, value) in environment { merged[key] = value }
    return try Subprocess.spawn(
      Products.path(tool), arguments: arguments, environment: merged, captureOutput: true,
      captureError: true)
  }

  // The tests are synchronous and block their own thread: an asynchronous test could not
  // resume while other suites' blocking tests hold every thread of the concurrency pool (two
  // on a two-core machine), and its watchers would time out meanwhile.

  /// Reads a child's output to its end and waits for it to exit.
  func finish(_ process: Subprocess, milliseconds: Int = 10_000) -> (
    output: String, error: String, termination: Subprocess.Termination
  ) {
    let (output, error) = process.readToEnd(milliseconds: milliseconds)
    return (output, error, process.wait())
  }

  /// Waits until the bus has a match rule from someone other than the bus itself, so a
  /// watcher started in the background is ready.
  func waitForWatchers(_ count: Int = 1) throws {
    let connection = try OneShotConnection(to: .address(bus.address))
    // Generous: a loaded machine can take many seconds to start a debug build.
    let deadline = ContinuousClock.now + .seconds(60)
    while ContinuousClock.now < deadline {
      let reply = try connection.call(
        .methodCall(
          destination: .bus, path: "/org/freedesktop/DBus",
          interface: "org.freedesktop.DBus.Debug.Stats", member: "GetStats"))
      let stats = reply.body.first?.stringDictionary ?? [:]
      if Int(stats["MatchRules"]?.uint64Value ?? 0) >= count { return }
      usleep(20_000)
    }
    Issue.record("fewer than \(count) match rules after 60 s: the watchers did not start")
  }

  @Test func postReachesWatchAndWatchExitsAfterCount() throws {
    let watch = try start(
      "notify-watch",
      ["--count", "2", "--timeout", "20", "group.example.saved", "--prefix", "group.other"])
    try waitForWatchers(2)
    let post = try Products.run(
      "notify-post", ["group.example.saved", "group.other.thing"], environment: environment)
    #expect(post.status == 0, "\(post)")
    #expect(post.output.isEmpty && post.error.isEmpty)
    let (output, error, termination) = finish(watch)
    #expect(termination == .exited(0), "\(error)")
    #expect(output == "group.example.saved\ngroup.other.thing\n")
  }

  @Test func watchPrintsJSONAndVerbose() throws {
    let json = try start("notify-watch", ["--json", "--count", "1", "--timeout", "20", "a.b"])
    let verbose = try start("notify-watch", ["-v", "--count", "1", "--timeout", "20", "a.b"])
    try waitForWatchers(2)
    _ = try Products.run("notify-post", ["a.b"], environment: environment)
    let jsonLine = finish(json).output
    #expect(jsonLine.hasPrefix("{\"name\":\"a.b\",\"time\":"), "\(jsonLine)")
    #expect(jsonLine.contains("\"sequence\":1,\"resynchronization\":false}\n"))
    #expect(jsonLine.contains("\"sender\":\":1."))
    let verboseLine = finish(verbose).output
    // [token] sec.mmm name state type; no notifyd, so the state is a failure code.
    let fields = verboseLine.split(separator: " ")
    #expect(fields.first?.hasPrefix("[") == true, "\(verboseLine)")
    #expect(fields.count == 9 && fields[2] == "a.b" && fields[3] == ":", "\(verboseLine)")
    #expect(verboseLine.hasSuffix(": Failed with code 9 events\n"))
  }

  @Test func watchTimesOutWithItsOwnStatus() throws {
    let result = try Products.run(
      "notify-watch", ["--timeout", "0.3", "nobody.posts"], environment: environment)
    #expect(result.status == ExitCode.timedOut.rawValue, "\(result)")
    #expect(result.output.isEmpty)
  }

  @Test(arguments: [
    (["notify-post", ""], "Error: invalid notification name '': it is empty"),
    (
      ["notify-post", "--state", "-1", "a.b"], "Error: The value '-1' is invalid for '--state <n>'"
    ),
    (["notify-post"], "Error: Missing expected argument '<name> ...'"),
    (["notify-watch"], "Error: Give at least one name or --prefix to watch."),
    (["notify-watch", "--prefix", "9x", "--timeout", "1"], "invalid namespace '9x'"),
    (["notify-watch", "--count", "x", "a.b"], "Error: The value 'x' is invalid for '--count <n>'"),
    (["notifyutil", "-x"], "Error: Unknown option '-x'"),
    (["notifyutil", "-p"], "Error: Missing value for '-p <key>'"),
    (["notifyutil", "-s", "a.b", "ten"], "Error: The value 'ten' is invalid for '-s <key> <val>'"),
    (["notifyutil", "--bus", "nowhere"], "Error: --bus: invalid D-Bus address 'nowhere'"),
    // Issue 11 item 4: huge timeouts are refused, not a crash converting them.
    (
      ["notify-watch", "--timeout", "1e300", "x"],
      "Error: The value '1e300' is invalid for '--timeout <seconds>': must be at most 1000000000 seconds"
    ),
    (
      ["readlater", "watch", "--timeout", "9.3e15"],
      "Error: The value '9.3e15' is invalid for '--timeout <seconds>': must be at most 1000000000 seconds"
    ),
    // Issue 11 item 9: --count 0 is a usage error.
    (
      ["notify-watch", "--count", "0", "x"],
      "Error: The value '0' is invalid for '--count <n>': must be at least 1"
    ),
    (
      ["readlater", "watch", "--count", "0"],
      "Error: The value '0' is invalid for '--count <n>': must be at least 1"
    ),
    // Issue 11 item 8: the examples' arguments are usage errors naming the option.
    (
      ["share-extension", "--url", "https://example.com/", "--notification", ""],
      "Error: --notification: invalid notification name '': it is empty"
    ),
    (
      ["share-extension", "--url", "https://example.com/", "--group", "../../etc"],
      "Error: --group: Invalid group identifier '../../etc'"
    ),
    (["readlater", "list", "--group", ""], "Error: --group: Invalid group identifier ''"),
    (["readlater", "lsit"], "Error: Unknown subcommand 'lsit'. Did you mean 'list'?"),
    (
      ["notify-post", "--generate-completion-script", "tcsh"],
      "Error: The value 'tcsh' is invalid for '--generate-completion-script <shell>'. Please "
        + "provide one of 'bash', 'zsh' or 'fish'."
    ),
    (
      ["readlater", "watch", "--cuont", "1"],
      "Error: Unknown option '--cuont'. Did you mean '--count'?"
    ),
  ])
  func badUsageExits64NamingTheProblem(_ command: [String], _ message: String) throws {
    let result = try Products.run(command[0], Array(command.dropFirst()), environment: environment)
    #expect(result.status == 64, "\(result)")
    #expect(result.error.contains(message), "\(result)")
    #expect(!result.error.contains("Error("), "an internal type name: \(result)")
    #expect(result.output.isEmpty)
  }

  /// Issue 11 item 10: an argument that is not UTF-8 is refused, never read as U+FFFD.
  @Test(arguments: [
    ("notify-post", [String](), "The argument 'a\\xFFb' is not valid UTF-8"),
    ("notifyutil", ["-p"], "The value 'a\\xFFb' for '-p' is not valid UTF-8"),
    ("share-extension", ["--url"], "The value 'a\\xFFb' for '--url' is not valid UTF-8"),
  ])
  func invalidUTF8IsAUsageError(_ tool: String, _ before: [String], _ message: String) throws {
    // A Swift string cannot hold the byte, so the shell makes it.
    let result = try Products.runCommand(
      "sh", ["-c", #""$0" "$@" "$(printf 'a\377b')""#, Products.path(tool)] + before,
      environment: environment)
    #expect(result.status == 64, "\(result)")
    #expect(result.error.hasPrefix("Error: \(message)\n"), "\(result)")
    #expect(!result.error.contains("\u{FFFD}"))
  }

  /// Issue 17 item 6: `postCount` counts this watcher's posts from 1.
  @Test func watchJSONCountsPostsFromOne() throws {
    let json = try start("notify-watch", ["--json", "--count", "1", "--timeout", "20", "c.d"])
    try waitForWatchers()
    _ = try Products.run("notify-post", ["c.d"], environment: environment)
    let line = finish(json).output
    #expect(line.contains("\"postCount\":1,"), "\(line)")
  }

  /// Starts notify-watch with `arguments`, `environment` over this process's, and its
  /// standard error going to `log`.
  func watch(_ arguments: [String], environment: [String: String], log: String) throws
    -> Subprocess
  {
    var merged = Products.currentEnvironment()
    for (key, value) in environment { merged[key] = value }
    return try Subprocess.spawn(
      Products.path("notify-watch"), arguments: arguments, environment: merged,
      captureOutput: true, errorFile: log)
  }

  /// The text of `log` once it contains `text`, or after 20 s what it has then.
  func waitForText(_ text: String, in log: String) -> String {
    let deadline = ContinuousClock.now + .seconds(20)
    var contents = ""
    while ContinuousClock.now < deadline {
      contents = readFile(log) ?? ""
      if contents.contains(text) { break }
      usleep(50_000)
    }
    return contents
  }

  /// Issue 17 item 7: on an explicit --bus that goes away, notify-watch says so, keeps
  /// running, reconnects when the bus is back and says that too, as its manual page says.
  @Test func watchOnAnExplicitBusLogsTheLossAndTheReconnect() throws {
    let log = bus.directory + "/watch.log"
    let watch = try watch(
      ["--bus", bus.address.rawValue, "e.f"],
      environment: ["DBUS_SESSION_BUS_ADDRESS": "", "NOTIFYBUS_BUS_ADDRESS": ""], log: log)
    defer {
      watch.kill()
      watch.wait()
    }
    try waitForWatchers()
    bus.kill()
    let lost = waitForText("notify-watch: lost the bus at \(bus.address.rawValue)", in: log)
    #expect(lost.contains("lost the bus"), "\(lost)")
    #expect(watch.wait(milliseconds: 0) == nil, "notify-watch exited when the bus went away")
    try bus.start()
    let back = waitForText("notify-watch: reconnected to", in: log)
    #expect(back.contains("reconnected to \(bus.address.rawValue)"), "\(back)")
    // The resynchronization delivery.
    #expect(watch.readLine(milliseconds: 10_000) == "e.f")
  }

  /// A watcher on the automatic bus whose session bus restarts goes back to that bus.
  ///
  /// The choice of bus is made once. Made again at each attempt, it fell through to the
  /// embedded bus while the session bus was away and stayed there, where no session peer
  /// posts.
  @Test func watchOnTheAutomaticBusReconnectsToTheSessionBusItChose() throws {
    let runtime = TemporaryDirectory("notifybus-runtime")
    let log = runtime.path("watch.log")
    let watch = try watch(
      ["i.j"],
      environment: [
        "DBUS_SESSION_BUS_ADDRESS": bus.address.rawValue, "NOTIFYBUS_BUS_ADDRESS": "",
        "XDG_RUNTIME_DIR": runtime.path,
      ], log: log)
    let embeddedBus = runtime.path("notifybus")
    defer {
      watch.kill()
      watch.wait()
      // An embedded bus the watcher may have started: stopped, so it outlives no test.
      if let pid = readFile(embeddedBus + "/bus.pid"), let number = pid_t(pid.filter(\.isNumber)) {
        kill(number, SIGTERM)
      }
    }
    try waitForWatchers()
    bus.kill()
    let lost = waitForText("notify-watch: lost the bus at \(bus.address.rawValue)", in: log)
    #expect(lost.contains("lost the bus"), "\(lost)")
    // Several attempts (25, 50, 100 ms apart) find the session bus gone.
    usleep(400_000)
    try bus.start()
    let back = waitForText("notify-watch: reconnected to", in: log)
    #expect(back.contains("reconnected to \(bus.address.rawValue)"), "\(back)")
    #expect(access(embeddedBus, F_OK) != 0, "an embedded bus was started: \(back)")
    #expect(watch.readLine(milliseconds: 10_000) == "i.j")
    _ = try Products.run("notify-post", ["i.j"], environment: environment)
    #expect(watch.readLine(milliseconds: 10_000) == "i.j")
  }

  /// Issue 17 item 8: with SIGPIPE ignored, a write to a closed pipe ends the tool with the
  /// documented message and status 1.
  @Test(arguments: [
    ["notify-watch", "--count", "1", "g.h"], ["notifyutil", "-1", "g.h"],
  ])
  func closedPipeWithSIGPIPEIgnoredIsReported(_ command: [String]) throws {
    let status = bus.directory + "/\(command[0]).status"
    let error = bus.directory + "/\(command[0]).err"
    let quoted = command.dropFirst().map { "'\($0)'" }.joined(separator: " ")
    // `true` exits at once, so the tool's first line meets a closed pipe.
    let script =
      "trap '' PIPE; { '\(Products.path(command[0]))' \(quoted) 2>'\(error)'; echo $? >'\(status)'; } | true"
    var merged = Products.currentEnvironment()
    for (key, value) in environment { merged[key] = value }
    let shell = try Subprocess.spawn("/bin/sh", arguments: ["-c", script], environment: merged)
    try waitForWatchers()
    _ = try Products.run("notify-post", ["g.h"], environment: environment)
    #expect(finish(shell).termination == .exited(0))
    #expect(try Products.runCommand("cat", [status]).output == "1\n")
    #expect(
      try Products.runCommand("cat", [error]).output
        == "Error: Unable to write to standard output: Broken pipe (errno 32)\n")
  }

  @Test func notifyPostRefusesAddressesWithoutAUnixSocket() throws {
    let result = try Products.run(
      "notify-post", ["--bus", "tcp:host=localhost,port=1", "a.b"], environment: environment)
    #expect(result.status == 1, "\(result)")
    #expect(
      result.error.hasPrefix(
        "Error: cannot reach the tcp:host=localhost,port=1 bus: cannot connect to "
          + "tcp:host=localhost,port=1: a one-shot connection reaches Unix sockets"),
      "\(result)")
  }

  /// A session bus notify-post cannot reach (tcp) is an error, not a reason to post on the
  /// embedded bus, where the session's watchers would never hear it.
  @Test func notifyPostDoesNotFallBackFromASessionBusItCannotUse() throws {
    let result = try Products.run(
      "notify-post", ["a.b"],
      environment: [
        "NOTIFYBUS_BUS_ADDRESS": "", "DBUS_SESSION_BUS_ADDRESS": "tcp:host=localhost,port=1",
        "XDG_RUNTIME_DIR": bus.directory,
      ])
    #expect(result.status == 1, "\(result)")
    #expect(result.error.contains("reaches Unix sockets"), "\(result)")
    #expect(access(bus.directory + "/notifybus", F_OK) != 0, "an embedded bus was started")
  }

  /// notify-post's start-up cost rests on being one static executable with no libdbus: no
  /// dynamic loader, no shared libraries to map and relocate.
  @Test func notifyPostIsAStaticExecutableWithoutLibdbus() throws {
    let file = try #require(fopen(Products.path("notify-post"), "rb"))
    defer { fclose(file) }
    var bytes = [UInt8](repeating: 0, count: 1 << 22)
    bytes.removeLast(bytes.count - fread(&bytes, 1, bytes.count, file))
    func integer(at offset: Int, size: Int) -> Int {
      (0..<size).reduce(0) { $0 | Int(bytes[offset + $1]) << (8 * $1) }
    }
    #expect(bytes.starts(with: [0x7F, UInt8(ascii: "E"), UInt8(ascii: "L"), UInt8(ascii: "F")]))
    let headers = integer(at: 0x20, size: 8)
    let size = integer(at: 0x36, size: 2)
    let types = (0..<integer(at: 0x38, size: 2)).map { integer(at: headers + $0 * size, size: 4) }
    #expect(!types.isEmpty)
    #expect(!types.contains(3), "a PT_INTERP header names a dynamic loader")
    #expect(!types.contains(2), "a PT_DYNAMIC header lists shared libraries")
  }

  @Test func noBusIsARuntimeFailure() throws {
    let missing = ["NOTIFYBUS_BUS_ADDRESS": "unix:path=/tmp/notifybus-nothing-here/bus"]
    for tool in ["notify-post", "notify-watch"] {
      let result = try Products.run(tool, ["a.b"], environment: missing)
      #expect(result.status == 1, "\(result)")
      #expect(
        result.error.hasPrefix("Error: cannot reach the automatic bus: cannot connect to"),
        "\(result)")
    }
  }

  @Test func notifyutilWatchesPostsAndReportsState() throws {
    let watcher = try start(
      "notifyutil", ["-1", "group.example.saved", "-file", "-2", "f.x", "-check", "-1", "c.x"])
    try waitForWatchers(3)
    let poster = try Products.run(
      "notifyutil",
      ["-z", "0", "-p", "group.example.saved", "-p", "f.x", "-p", "c.x", "-p", "f.x", "-g", "c.x"],
      environment: environment)
    #expect(poster.status == 0, "\(poster)")
    #expect(poster.output == "c.x: Failed with code 9\n", "no notifyd yet")
    let (output, error, termination) = finish(watcher)
    #expect(termination == .exited(0), "\(error)")
    #expect(output.split(separator: "\n").sorted() == ["c.x", "f.x", "f.x", "group.example.saved"])
  }

  @Test func notifyutilSignalModeReportsTheSignal() throws {
    let watcher = try start("notifyutil", ["-signal", "10", "-1", "s.x"])
    try waitForWatchers(1)
    _ = try Products.run("notifyutil", ["-z", "0", "-p", "s.x"], environment: environment)
    let (output, error, termination) = finish(watcher)
    #expect(termination == .exited(0), "\(error)")
    #expect(output == "SIGNAL 10\ns.x\n")
  }

  @Test func helpAndVersionGoToStandardOutput() throws {
    for tool in ["notify-post", "notify-watch"] {
      let help = try Products.run(tool, ["--help"])
      #expect(help.status == 0)
      #expect(help.output.hasPrefix("OVERVIEW: "))
      #expect(help.output.contains("USAGE: \(tool) "))
      let version = try Products.run(tool, ["--version"])
      #expect(version.output == "0.1.0\n")
    }
    let usage = try Products.run("notifyutil", ["-h"])
    #expect(usage.status == 0)
    #expect(usage.error.hasPrefix("usage: notifyutil [-q] [-v] [-z msec]"))
  }
}
