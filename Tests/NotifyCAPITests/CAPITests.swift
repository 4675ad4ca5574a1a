import BusTestSupport
import DBus
import SystemSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The C library (`notify.h`, libnotifybus.so.1) exercised by C programs, each run against
/// a private `dbus-daemon` (and a `notifyd` where state is involved); libnotify.md §4 and §7.
///
/// The tests run one at a time: several of these programs keep both of this machine's cores
/// busy, which would make other suites' timing-sensitive tests flaky.
@Suite(
  .enabled(if: PrivateBus.isAvailable && CPrograms.isAvailable), .serialized,
  .timeLimit(.minutes(5)))
struct CAPITests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  /// The environment of a program: this bus, and no other.
  var environment: [String: String] {
    ["NOTIFYBUS_BUS_ADDRESS": bus.address.rawValue, "DBUS_SESSION_BUS_ADDRESS": "disabled:"]
  }

  /// Runs a built program and expects it to exit with `status` (its failures are printed).
  @discardableResult
  func run(
    _ name: String, _ arguments: [String] = [], gcc: Bool = false, status: CInt = 0,
    timeout: Int = 120
  ) async throws -> Products.Result {
    // Building the programs and waiting for one block a thread: keep them off the Swift
    // concurrency pool, which has one thread per core and serves every suite running now.
    let environment = environment
    let result = try await offThePool {
      try Products.runCommand(
        try CPrograms.path(name, gcc: gcc), arguments, environment: environment, timeout: timeout)
    }
    #expect(result.status == status, "\(name): \(result)")
    return result
  }

  @Test func theProgramsBuildWithClangAndTheBlockFreeOnesWithGcc() async throws {
    let build = try await offThePool { CPrograms.build }
    #expect(throws: Never.self, "\(build)") { try build.get() }
  }

  @Test func firstCheckIsTrueThenFalseUntilAPost() async throws {
    try await run("check_and_dispatch")
  }

  @Test func onePostRunsTenHandlersOnceAndAHandlerCancelsItsOwnToken() async throws {
    try await run("dispatch_fanout")
  }

  @Test func suspendThenOneDeliveryOnResume() async throws {
    try await run("suspend_resume")
  }

  @Test func fiveHundredDescriptorRegistrationsEachGetTheirBigEndianToken() async throws {
    try await run("fd_reuse")
    try await run("fd_reuse", gcc: true)
  }

  @Test func signalRegistrationsCountPostsNotRawSignals() async throws {
    try await run("signal_delivery")
    try await run("signal_delivery", gcc: true)
  }

  @Test func badInputReturnsDarwinsStatusesAndNeverCrashes() async throws {
    try await run("bad_input")
    try await run("bad_input", gcc: true)
  }

  /// The 100,000 rounds, reduced to 5,000 here.
  ///
  /// 100,000 take about 31 s of both cores in a debug build on this machine (27.3 s on the
  /// plain name, 4.0 s on the self. name, all OK), measured once; `notifybus-bench capi`
  /// runs the full 100,000 in release.
  @Test func parallelRegisterCancelPostRoundsAllReturnOK() async throws {
    let result = try await run("parallel", ["5000"], timeout: 240)
    #expect(result.output.contains("com.example.test: 5000 rounds"))
    #expect(result.output.contains("self.example.test: 5000 rounds"))
  }

  @Test func registrationsWorkAfterExec() async throws {
    try await run("exec_again", status: 42)
  }

  @Test func forkDisablesTheChildAndTheParentKeepsWorking() async throws {
    try await run("fork_child")
  }

  @Test func monitorFilePostsOncePerCreateWriteAndUnlink() async throws {
    let directory = bus.directory + "/watched"
    mkdir(directory, 0o700)
    try await run("monitor_file", [directory])
  }

  @Test func aDeadBusReturnsServerNotFoundAndALaterCallWorks() async throws {
    // A bus of its own, killed before the program starts and restarted while it waits.
    let runs = try await offThePool {
      let deadBus = try PrivateBus()
      deadBus.kill()
      return try [false, true].map { gcc in
        let go = deadBus.directory + "/go-\(gcc)"
        let program = try Subprocess.spawn(
          try CPrograms.path("dead_bus", gcc: gcc), arguments: [go],
          environment: Products.currentEnvironment().merging(
            [
              "NOTIFYBUS_BUS_ADDRESS": deadBus.address.rawValue,
              "DBUS_SESSION_BUS_ADDRESS": "disabled:",
            ]
          ) { $1 }, captureOutput: true, captureError: true)
        let firstLine = program.readLine(milliseconds: 30_000)
        try deadBus.start()
        _ = open(go, O_WRONLY | O_CREAT, 0o600)
        let (output, errors) = program.readToEnd(milliseconds: 60_000)
        let exited = program.wait() == .exited(0)
        deadBus.kill()
        return (firstLine, exited, output + errors)
      }
    }
    for (firstLine, exited, output) in runs {
      #expect(firstLine == "waiting")
      #expect(exited, "\(output)")
    }
  }

  /// Issue 14's "a later call works again once a bus answers" for a process that was
  /// connected: the bus is killed and restarted at the same address while the program
  /// holds check, dispatch and file-descriptor tokens (Programs/bus_restart.c).
  @Test func tokensKeepWorkingWhenTheBusIsKilledAndRestartedAtTheSameAddress() async throws {
    let result = try await offThePool { () throws -> (Subprocess.Termination, String) in
      let name = "org.notifybus.test.restart.\(getpid())"
      let program = try Subprocess.spawn(
        try CPrograms.path("bus_restart"), arguments: ["watch", name, bus.directory],
        environment: Products.currentEnvironment().merging(environment) { $1 },
        captureOutput: true, captureError: true)
      var lines: [String?] = []
      func step(_ expected: String, then file: String, _ action: () throws -> Void) throws {
        let line = program.readLine(milliseconds: 60_000)
        lines.append(line)
        guard line == expected else { return }
        try action()
        _ = open(bus.directory + "/" + file, O_WRONLY | O_CREAT, 0o600)
      }
      try step("ready", then: "killed") { bus.kill() }
      try step("down", then: "restarted") { try bus.start() }
      try step("reconnected", then: "posted") {
        let poster = try Products.runCommand(
          try CPrograms.path("bus_restart"), ["post", name], environment: environment)
        #expect(poster.status == 0, "\(poster)")
      }
      let (output, errors) = program.readToEnd(milliseconds: 60_000)
      #expect(lines == ["ready", "down", "reconnected"], "\(lines) \(output)\(errors)")
      return (program.wait(), output + errors)
    }
    #expect(result.0 == .exited(0), "\(result.1)")
  }

  /// Posts and registrations use two connections (Protocol/c-api.md): the second one goes
  /// to the bus the first one reached, even when the environment names another by then.
  @Test func postsAndRegistrationsOfAProcessMeetOnOneBus() async throws {
    try await run("bus_restart", ["same-bus", "org.notifybus.test.same-bus"])
  }

  @Test func stateSetByOneProcessIsReadByAnother() async throws {
    let notifyd = try await Notifyd(bus: bus)
    _ = notifyd
    try await run("state", ["set", "org.notifybus.test.shared", "9876543210"])
    let read = try await run("state", ["get", "org.notifybus.test.shared"])
    #expect(read.output.hasPrefix("9876543210\n"))
  }

  /// In three threads at once, beside a thread posting in bursts, a call relies on no round
  /// trip sent before its posts.
  ///
  /// With one "posted since" flag, a thread could take the flag another thread's fence had
  /// cleared: 2 of 6 runs failed. Calls that wait at once share round trips
  /// (`notify_dump_status` counts those that did).
  @Test func aCallThatWaitsNeverOvertakesTheProcesssOwnEarlierPost() async throws {
    let notifyd = try await Notifyd(bus: bus)
    _ = notifyd
    try await run(
      "state", ["fence", "org.notifybus.test.fence", bus.directory + "/fence-report.txt"])
  }

  @Test func theVersionNameReportsNotifydsPidAndInterfaceVersion() async throws {
    let notifyd = try await Notifyd(bus: bus)
    let result = try await run("state", ["version"])
    #expect(result.output.hasPrefix("pid \(notifyd.process.pid) version 1\n"), "\(result)")
  }

  @Test func registrationsAndStateSurviveANotifydRestart() async throws {
    var notifyd: Notifyd? = try await Notifyd(bus: bus)
    let go = bus.directory + "/go"
    let program = try Subprocess.spawn(
      try CPrograms.path("state"), arguments: ["survive", "org.notifybus.test.survive", go],
      environment: Products.currentEnvironment().merging(environment) { $1 }, captureOutput: true,
      captureError: true)
    #expect(program.readLine(milliseconds: 30_000) == "ready")
    let firstPid = notifyd?.process.pid
    notifyd = nil  // SIGKILL: no state file is written at exit
    notifyd = try await Notifyd(bus: bus)
    #expect(notifyd?.process.pid != firstPid)
    _ = open(go, O_WRONLY | O_CREAT, 0o600)
    let (output, errors) = program.readToEnd(milliseconds: 60_000)
    #expect(program.wait() == .exited(0), "\(output)\(errors)")
    let version = try await run("state", ["version"])
    #expect(version.output.hasPrefix("pid \(notifyd!.process.pid) "), "\(version)")
  }

  @Test func optionsPeekAndDumpStatus() async throws {
    let notifyd = try await Notifyd(bus: bus)
    _ = notifyd
    try await run("options_peek", [bus.directory + "/report.txt"])
  }

  @Test func theCExampleWatchesAndPosts() async throws {
    let result = try await run("notify-example", ["group.example.saved", "3"])
    #expect(result.output.contains("posted group.example.saved (3 of 3)"))
    let received = result.output.split(separator: "\n").filter {
      $0.hasPrefix("received group.example.saved")
    }
    #expect(received.count == 3)
    #expect(result.output.hasSuffix("check: posted since the last check\n"))
    try await run("notify-example", ["group.example.saved", "zero"], status: 64)
  }

  @Test func theLibraryExportsOnlyVersionedNotifySymbols() async throws {
    _ = try await offThePool { try CPrograms.build.get() }
    let symbols = try Products.runCommand(
      "objdump", ["-T", CPrograms.build.get().prefix + "/lib/libnotifybus.so.1"])
    let exported = symbols.output.split(separator: "\n").filter {
      $0.contains(" g ") && $0.contains(".text")
    }
    #expect(exported.count == 19, "\(exported)")
    #expect(exported.allSatisfy { $0.contains("NOTIFYBUS_1") && $0.contains(" notify_") })
    let dynamic = try Products.runCommand(
      "readelf", ["-d", CPrograms.build.get().prefix + "/lib/libnotifybus.so.1"])
    #expect(dynamic.output.contains("Library soname: [libnotifybus.so.1]"))
  }
}

/// A `notifyd` on a test's bus, killed with `SIGKILL` when released.
final class Notifyd {
  let process: Subprocess

  init(bus: PrivateBus) async throws {
    process = try Subprocess.spawn(
      Products.path("notifyd"),
      arguments: ["--bus", bus.address.rawValue, "--state-file", bus.directory + "/notifyd.state"],
      environment: Products.currentEnvironment().merging(["HOME": bus.directory]) { $1 },
      captureOutput: false, errorFile: bus.directory + "/notifyd.log")
    let connection = try await BusConnection.connect(to: .address(bus.address))
    defer { Task { await connection.close() } }
    let deadline = ContinuousClock.now + .seconds(20)
    while ContinuousClock.now < deadline {
      if let owner = try? await connection.owner(of: "org.notifybus.Notify1"),
        let credentials = try? await connection.credentials(of: owner),
        credentials.processID == UInt32(bitPattern: process.pid)
      {
        return
      }
      try await Task.sleep(for: .milliseconds(10))
    }
    throw DBusError(.timeout, "notifyd did not take org.notifybus.Notify1")
  }

  deinit {
    process.kill(SIGKILL)
    process.wait()
  }
}
