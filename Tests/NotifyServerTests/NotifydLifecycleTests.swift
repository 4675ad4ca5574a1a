import BusTestSupport
import DBus
import NotifyServer
import SystemSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// notifyd across the loss of its bus, and where it logs.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct NotifydLifecycleTests {
  @Test func restartingTheEmbeddedBusLeavesExactlyOneNotifyd() async throws {
    let sandbox = try EmbeddedBusSandbox()
    defer { sandbox.stop() }
    let set = try await Products.runAsync(
      "notifyutil", ["-s", "foo", "5"], environment: sandbox.environment)
    #expect(set.status == 0, "\(set)")
    let first = try #require(sandbox.notifydProcessID())
    // notifyd saves 100 ms after a change: wait for that save, so the notifyd the restarted
    // bus starts reads foo (the first one writes its state again only as it exits).
    let stateFile = sandbox.directory + "/state/notifybus/notifyd.state"
    #expect(await waitUntil { readFile(stateFile)?.contains("\nfoo 5 ") == true })
    // Restart the bus: end the daemon, wait for its socket to go, let a tool start it again.
    let busPID = try #require(
      readFile(sandbox.runtime + "/notifybus/bus.pid").flatMap {
        pid_t($0.split(separator: "\n").first ?? "")
      })
    kill(busPID, SIGTERM)
    #expect(await waitUntil { !isRunning(busPID) })
    let get = try await Products.runAsync(
      "notifyutil", ["-g", "foo"], environment: sandbox.environment)
    #expect(get.output == "foo 5\n", "\(get)")
    let second = try #require(sandbox.notifydProcessID())
    #expect(second != first)
    // Within 2 s the first notifyd has noticed the new bus and exited: one notifyd is left.
    let deadline = ContinuousClock.now + .seconds(2)
    while isRunning(first) && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    #expect(!isRunning(first), "the first notifyd is still running 2 s after the restart")
    #expect(notifydProcesses(in: sandbox.directory) == [second])
    let log = try #require(readFile(sandbox.directory + "/state/notifybus/notifyd.log"))
    #expect(log.contains("notifyd[\(first)]: lost the bus at unix:path="), "\(log)")
    #expect(log.contains("notifyd[\(first)]: the bus at unix:path="), "\(log)")
    // It saw the new bus's guid, or, when the restarted bus came later than the 5 s it waits
    // for an answer (seen under a loaded suite: 6 s), gave up on the old one: it exits
    // either way, leaving the one notifyd the new bus started.
    #expect(
      log.contains("was replaced (guid ") || log.contains("is gone: nothing has answered there"),
      "\(log)")
    #expect(log.contains("notifyd[\(second)]: serving org.notifybus.Notify1 on "), "\(log)")
  }

  @Test func anActivatedNotifydWhoseBusIsGoneForGoodExits() async throws {
    let sandbox = try EmbeddedBusSandbox()
    defer { sandbox.stop() }
    let set = try await Products.runAsync(
      "notifyutil", ["-s", "foo", "5"], environment: sandbox.environment)
    #expect(set.status == 0, "\(set)")
    let notifyd = try #require(sandbox.notifydProcessID())
    let busPID = try #require(
      readFile(sandbox.runtime + "/notifybus/bus.pid").flatMap {
        pid_t($0.split(separator: "\n").first ?? "")
      })
    kill(busPID, SIGTERM)
    #expect(await waitUntil { !isRunning(busPID) })
    // No bus comes back: within the grace period and a few probes more, notifyd exits.
    let deadline = ContinuousClock.now + BusWatch.goneAfter + .seconds(5)
    while isRunning(notifyd) && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(50))
    }
    #expect(!isRunning(notifyd), "notifyd is still running with its bus gone")
    let log = try #require(readFile(sandbox.directory + "/state/notifybus/notifyd.log"))
    #expect(log.contains("notifyd[\(notifyd)]: lost the bus at unix:path="), "\(log)")
    #expect(log.contains("is gone: nothing has answered there for"), "\(log)")
  }

  @Test func aNotifydGivenABusKeepsReconnecting() async throws {
    let bus = try PrivateBus()
    let daemon = try await NotifydProcess(bus: bus, ["--no-persist"])
    bus.kill()
    try await Task.sleep(for: .milliseconds(300))
    try bus.start()
    try await NotifydProcess.waitForOwner(bus)
    #expect(daemon.process.wait(milliseconds: 0) == nil, "notifyd must keep running")
    let log = daemon.log
    #expect(log.contains("notifyd: lost the bus at \(bus.address); reconnecting"), "\(log)")
    #expect(log.contains("notifyd: reconnected to the bus at \(bus.address) as :1."), "\(log)")
  }

  @Test func anActivatedNotifydLogsToACappedFile() async throws {
    let bus = try PrivateBus()
    let state = bus.directory + "/xdg-state"
    let logPath = state + "/notifybus/notifyd.log"
    _ = try await Products.runCommandAsync("mkdir", ["-p", state + "/notifybus"])
    writeFile(logPath, String(repeating: "old line\n", count: NotifydLog.limit / 9 + 1))
    let daemon = try await NotifydProcess(
      bus: bus, ["--no-persist"],
      environment: [
        "DBUS_STARTER_ADDRESS": bus.address.rawValue, "XDG_STATE_HOME": state,
        "INVOCATION_ID": "", "JOURNAL_STREAM": "",
      ])
    // The first line would pass the limit: the old file became notifyd.log.1.
    let log = try #require(readFile(logPath))
    #expect(
      log.contains("Z notifyd[\(daemon.process.pid)]: serving org.notifybus.Notify1"), "\(log)")
    #expect(!log.contains("old line"))
    #expect(readFile(logPath + ".1")?.hasPrefix("old line\n") == true)
    #expect(daemon.log.isEmpty, "standard error goes to the file too: \(daemon.log)")
  }

  @Test func underSystemdNotifydLogsToStandardError() async throws {
    let bus = try PrivateBus()
    let state = bus.directory + "/xdg-state"
    let daemon = try await NotifydProcess(
      bus: bus, ["--no-persist"],
      environment: [
        "DBUS_STARTER_ADDRESS": bus.address.rawValue, "XDG_STATE_HOME": state,
        "INVOCATION_ID": "0123456789abcdef0123456789abcdef",
      ])
    #expect(daemon.log.contains("notifyd: serving org.notifybus.Notify1"), "\(daemon.log)")
    #expect(readFile(state + "/notifybus/notifyd.log") == nil)
  }
}

/// The running notifyd processes whose environment mentions `directory`.
func notifydProcesses(in directory: String) -> [pid_t] {
  guard let proc = opendir("/proc") else { return [] }
  defer { closedir(proc) }
  var result: [pid_t] = []
  while let entry = readdir(proc) {
    let name = withUnsafeBytes(of: entry.pointee.d_name) {
      String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
    }
    guard let pid = pid_t(name), isRunning(pid),
      let command = readFile("/proc/\(pid)/cmdline"),
      command.split(separator: "\0").first?.hasSuffix("/notifyd") == true,
      let environment = readFile("/proc/\(pid)/environ"), environment.contains(directory)
    else { continue }
    result.append(pid)
  }
  return result
}
