import BusTestSupport
import DBus
import SystemSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `notifybus` against a real embedded bus, a real notifyd, and the stock D-Bus tools.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct NotifyBusToolTests {
  let sandbox: EmbeddedBusSandbox

  init() throws { sandbox = try EmbeddedBusSandbox() }

  /// Runs `script` with `sh -c` in the sandbox's environment, with the tools on PATH.
  func shell(_ script: String) async throws -> Products.Result {
    var environment = sandbox.environment
    environment["PATH"] = Products.directory + ":" + (Environment.value("PATH") ?? "/usr/bin:/bin")
    return try await Products.runCommandAsync(
      "sh", ["-c", "cd '\(sandbox.directory)' || exit 99\n" + script], environment: environment)
  }

  @Test func envGivesTheStockToolsTheBusTheToolsUse() async throws {
    defer { sandbox.stop() }
    let env = try await Products.runAsync("notifybus", ["env"], environment: sandbox.environment)
    #expect(
      env.output
        == "DBUS_SESSION_BUS_ADDRESS='\(sandbox.busAddress)'; export DBUS_SESSION_BUS_ADDRESS;\n",
      "\(env)")
    // dbus-send and gdbus reach notifyd through the session bus the eval set.
    let set = try await shell(
      """
      eval "$(notifybus env)" && notifyutil -s foo 5 &&
      dbus-send --session --print-reply=literal --dest=org.notifybus.Notify1 \
        /org/notifybus/Notify1 org.notifybus.Notify1.GetState string:foo &&
      gdbus call --session --dest org.notifybus.Notify1 --object-path /org/notifybus/Notify1 \
        --method org.notifybus.Notify1.GetState foo &&
      busctl --user call org.notifybus.Notify1 /org/notifybus/Notify1 org.notifybus.Notify1 \
        GetState s foo
      """)
    #expect(set.status == 0, "\(set)")
    #expect(set.output == "   uint64 5\n(uint64 5,)\nt 5\n", "\(set)")
    // dbus-monitor sees a post from notify-post; hand-written dbus-send and gdbus posts, the
    // commands Protocol/notify.md gives, on the interface notifybus names, reach notify-watch.
    let monitor = try await shell(
      """
      eval "$(notifybus env)"
      dbus-monitor --session "type='signal',member='Posted'" > monitor.log 2>&1 &
      monitor=$!
      notify-watch --count 1 --timeout 10 hand.written > watch.log &
      watch=$!
      notify-watch --count 1 --timeout 10 gdbus.written > gdbus.log &
      gdbus=$!
      sleep 0.5
      notify-post group.example.saved
      dbus-send --session --type=signal /org/notifybus/Notify1 \
        "$(notifybus interface hand.written).Posted" string:hand.written
      gdbus emit --session --object-path /org/notifybus/Notify1 \
        --signal "$(notifybus interface gdbus.written).Posted" "'gdbus.written'"
      wait $watch; status=$?
      wait $gdbus || status=$?
      sleep 0.3; kill $monitor
      cat watch.log gdbus.log monitor.log; exit $status
      """)
    #expect(monitor.status == 0, "\(monitor)")
    #expect(monitor.output.hasPrefix("hand.written\ngdbus.written\n"), "\(monitor)")
    #expect(
      monitor.output.contains(
        "interface=org.notifybus.Notify1.N.group.example.saved; member=Posted"),
      "\(monitor)")
  }

  @Test func statusSaysWhichBusAndWhy() async throws {
    defer { sandbox.stop() }
    let before = try await Products.runAsync(
      "notifybus", ["status"], environment: sandbox.environment)
    #expect(before.status == 0, "\(before)")
    #expect(
      before.output == """
        bus: \(sandbox.busAddress)
          chosen: there is no session bus: the embedded bus
          embedded bus: not running; the tools start it when they need it
        notifyd: unknown (the bus is not running)

        """, "\(before)")
    _ = try await Products.runAsync(
      "notifyutil", ["-s", "foo", "5"], environment: sandbox.environment)
    let pid = try #require(sandbox.notifydProcessID())
    let after = try await Products.runAsync(
      "notifybus", ["status"], environment: sandbox.environment)
    #expect(after.output.contains("\nnotifyd: running, pid \(pid), :1."), "\(after)")
    #expect(
      after.output.contains(
        "\n  state file: \(sandbox.directory)/state/notifybus/notifyd.state\n"), "\(after)")
    #expect(after.output.contains("\n  names: 1 of 100000, 1 with a state\n"), "\(after)")
    let json = try await Products.runAsync(
      "notifybus", ["status", "--json"], environment: sandbox.environment)
    #expect(json.output.hasPrefix("{\"bus\":{\"address\":\"\(sandbox.busAddress)\""), "\(json)")
    #expect(json.output.contains("\"notifyd\":{\"running\":true,\"activatable\":true"), "\(json)")
    #expect(json.output.contains("\"processID\":\(pid),"), "\(json)")
    // Through a session bus given in the environment, the reason says so.
    var session = sandbox.environment
    session["DBUS_SESSION_BUS_ADDRESS"] = sandbox.busAddress.rawValue
    let viaSession = try await Products.runAsync("notifybus", ["status"], environment: session)
    #expect(
      viaSession.output.contains("\n  chosen: the session bus, from DBUS_SESSION_BUS_ADDRESS\n"),
      "\(viaSession)")
  }

  @Test func namesListsStateAndLastChanges() async throws {
    defer { sandbox.stop() }
    _ = try await Products.runAsync(
      "notifyutil", ["-s", "b.set", "7"], environment: sandbox.environment)
    _ = try await Products.runAsync("notify-post", ["a.posted"], environment: sandbox.environment)
    var text = ""
    for _ in 0..<100 {
      text = try await Products.runAsync("notifybus", ["names"], environment: sandbox.environment)
        .output
      if text.contains("a.posted") { break }
      usleep(20_000)
    }
    let lines = text.split(separator: "\n")
    #expect(lines.count == 3, "\(text)")
    #expect(lines.first == "NAME      STATE  STATE SET             POSTS  LAST POST", "\(text)")
    #expect(
      lines.dropFirst().first?.hasPrefix("a.posted  0      -                     1      20")
        == true, "\(text)")
    #expect(lines.last?.hasPrefix("b.set     7      20") == true, "\(text)")
    #expect(lines.last?.hasSuffix("  0      -") == true, "\(text)")
    let json = try await Products.runAsync(
      "notifybus", ["names", "--json"], environment: sandbox.environment)
    #expect(
      json.output.hasPrefix(
        "[{\"name\":\"a.posted\",\"state\":0,\"stateSet\":null,\"posts\":1,\"lastPost\":\"20"),
      "\(json)")
    #expect(json.output.contains("{\"name\":\"b.set\",\"state\":7,\"stateSet\":\"20"), "\(json)")
  }

  @Test func stopEndsNotifydAndTheBus() async throws {
    defer { sandbox.stop() }
    let none = try await Products.runAsync("notifybus", ["stop"], environment: sandbox.environment)
    #expect(
      none.status == 0
        && none.output == "no embedded bus is running at \(sandbox.runtime)/notifybus/bus\n",
      "\(none)")
    _ = try await Products.runAsync(
      "notifyutil", ["-s", "foo", "9"], environment: sandbox.environment)
    let notifyd = try #require(sandbox.notifydProcessID())
    let stop = try await Products.runAsync("notifybus", ["stop"], environment: sandbox.environment)
    #expect(stop.status == 0, "\(stop)")
    #expect(
      stop.output.hasPrefix("stopped notifyd (pid \(notifyd))\nstopped the embedded bus (pid "),
      "\(stop)")
    #expect(!isRunning(notifyd))
    // notifyd wrote its state on the way out, and the next tool starts both again.
    let get = try await Products.runAsync(
      "notifyutil", ["-g", "foo"], environment: sandbox.environment)
    #expect(get.output == "foo 9\n", "\(get)")
  }

  @Test func badInputIsAUsageErrorNamingIt() async throws {
    defer { sandbox.stop() }
    let cases: [([String], String)] = [
      (["frob"], "Error: Unknown subcommand 'frob'"),
      (["interface", String(repeating: "n", count: 600)], "Error: invalid notification name"),
      (["interface", ""], "Error: invalid notification name '': it is empty\n"),
      (["status", "--bogus"], "Error: Unknown option '--bogus'"),
      (["status", "--bus", "nonsense:"], "Error: --bus:"),
      ([], "Error: Missing expected argument '<subcommand>'\n"),
    ]
    for (arguments, message) in cases {
      let result = try await Products.runAsync(
        "notifybus", arguments, environment: sandbox.environment)
      #expect(result.status == 64, "\(arguments): \(result)")
      #expect(result.error.hasPrefix(message), "\(arguments): \(result)")
      #expect(result.output.isEmpty, "\(arguments): \(result)")
    }
    let interface = try await Products.runAsync(
      "notifybus", ["interface", "odd name"], environment: sandbox.environment)
    #expect(
      interface.status == 0 && interface.output.hasPrefix("org.notifybus.Notify1."), "\(interface)")
  }
}
