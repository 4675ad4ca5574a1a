import Activation
import BusTestSupport
import DBus
import Foundation
import SystemSupport
import TestTraits
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// readlater as a D-Bus-activatable application, on a private bus with its service file and
/// a temporary XDG_DATA_HOME holding its desktop entry: real processes throughout.
@Suite(.blocking, .serialized, .enabled(if: PrivateBus.isAvailable, "dbus-daemon is not installed"))
struct ActivationProcessTests {
  @Test func aShareStartsTheStoppedAppWhichDrainsAndExitsWhenIdle() async throws {
    let fixture = try await ActivationFixture(idleTimeout: 4)
    let connection = try await BusConnection.connect(to: .address(fixture.bus.address))
    #expect(try await fixture.ownerProcess(connection) == nil)

    let share = try await fixture.share("https://example.com/activated")
    #expect(share.status == 0, "\(share)")
    #expect(
      share.output.contains(
        "opened readlater://import?count=1 over D-Bus to org.notifybus.ReadLater, started by the bus"
      ),
      "\(share)")
    // Open is answered after the drain: the item is stored when the extension ends.
    #expect(try await fixture.storedURLs() == ["https://example.com/activated"])

    // Nothing more to do: it gives up its name and exits after the idle timeout. Its log
    // (--log in the service file) says it was the bus's readlater open, and why it ended.
    #expect(
      try await waitUntil(timeout: .seconds(60), every: .milliseconds(50)) {
        try await fixture.ownerProcess(connection) == nil
          && readFile(fixture.root + "/readlater.log")?.contains("exiting") == true
      })
    let log = readFile(fixture.root + "/readlater.log") ?? ""
    #expect(log.hasPrefix("app: org.notifybus.ReadLater (pid "), "\(log)")
    #expect(log.contains("app: started; draining"), "\(log)")
    #expect(log.contains("app: stored \"A page\" <https://example.com/activated>"), "\(log)")
    #expect(log.contains("app: asked to open readlater://import?count=1 (1 waiting)"), "\(log)")
    #expect(
      log.hasSuffix("app: imported 1, dropped 0 duplicate URLs; idle for 4.0 seconds, exiting\n"),
      "\(log)")
    await connection.close()
  }

  @Test func openReachesTheRunningInstanceAndNoSecondOneStarts() async throws {
    let fixture = try await ActivationFixture(idleTimeout: 60)
    let connection = try await BusConnection.connect(to: .address(fixture.bus.address))
    let app = try fixture.spawnReadLater(["--idle-timeout", "60"])
    defer {
      app.kill(SIGTERM)
      app.wait()
    }
    #expect(
      try await waitUntil(timeout: .seconds(30)) {
        try await fixture.ownerProcess(connection) == UInt32(app.pid)
      })

    let share = try await fixture.share("https://example.com/running")
    #expect(share.status == 0, "\(share)")
    #expect(
      share.output.contains("over D-Bus to org.notifybus.ReadLater, already running"), "\(share)")
    #expect(try await fixture.storedURLs() == ["https://example.com/running"])

    // A second launch hands its URL over and exits 0; the first instance still owns the name.
    let second = try await fixture.run("readlater", ["open", "readlater://import?count=1"])
    #expect(second.status == 0, "\(second)")
    #expect(
      second.output.contains(
        "app: handed readlater://import?count=1 to the running org.notifybus.ReadLater"),
      "\(second)")
    #expect(try await fixture.ownerProcess(connection) == UInt32(app.pid))
    let processes = try await Products.runCommandAsync(
      "pgrep", ["-f", "-c", Products.path("readlater") + " open"])
    #expect(processes.output.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "\(processes)")

    // The object is introspectable and serves org.freedesktop.Application.
    let xml = try await connection.call(
      .methodCall(
        destination: ActivationFixture.id.busName, path: ActivationFixture.id.objectPath,
        interface: "org.freedesktop.DBus.Introspectable", member: "Introspect"))
    let document = xml.body.first?.stringValue ?? ""
    #expect(document.contains("<interface name=\"org.freedesktop.Application\">"))
    #expect(document.contains("<method name=\"ActivateAction\">"))

    // Activate and the import action drain too; an unknown action is an error.
    _ = try await connection.call(
      ApplicationInterface.call(
        ApplicationInterface.activate, to: ActivationFixture.id, body: [.dictionary([:])]))
    _ = try await connection.call(
      ApplicationInterface.call(
        ApplicationInterface.activateAction, to: ActivationFixture.id,
        body: [.string("import"), .array(elementType: "v", []), .dictionary([:])]))
    await #expect {
      _ = try await connection.call(
        ApplicationInterface.call(
          ApplicationInterface.activateAction, to: ActivationFixture.id,
          body: [.string("nonsense"), .array(elementType: "v", []), .dictionary([:])]))
    } throws: { "\($0)".contains("readlater has no action 'nonsense'") }
    await connection.close()
  }

  /// A process the bus started stays on that bus (`DBUS_STARTER_ADDRESS`), even when the
  /// session bus is another one, or gone: it must not fall back to the session or embedded
  /// bus, where no one asked for it.
  @Test func anAppStartedByTheBusOwnsItsNameOnThatBusNotTheSessionBus() async throws {
    let fixture = try await ActivationFixture(idleTimeout: 60)
    let session = try PrivateBus()
    let connection = try await BusConnection.connect(to: .address(fixture.bus.address))
    let other = try await BusConnection.connect(to: .address(session.address))
    let app = try fixture.spawnReadLater(
      ["--idle-timeout", "60"],
      overrides: [
        "DBUS_STARTER_ADDRESS": fixture.bus.address.rawValue,
        "DBUS_STARTER_BUS_TYPE": "session",
        "DBUS_SESSION_BUS_ADDRESS": session.address.rawValue,
        "NOTIFYBUS_BUS_ADDRESS": nil,
      ])
    defer {
      app.kill(SIGTERM)
      app.wait()
    }
    #expect(
      try await waitUntil(timeout: .seconds(30)) {
        try await fixture.ownerProcess(connection) == UInt32(app.pid)
      })
    #expect(try await fixture.ownerProcess(other) == nil)
    await other.close()
    await connection.close()
  }

  @Test func gioOpenStartsTheAppFromItsDesktopEntry() async throws {
    guard access("/usr/bin/gio", X_OK) == 0 else { return }
    let fixture = try await ActivationFixture(idleTimeout: 2)
    let connection = try await BusConnection.connect(to: .address(fixture.bus.address))
    // A share stored while no handler is installed: nothing opened, the share waits.
    fixture.removeEntry()
    let share = try await fixture.share("https://example.com/gio")
    #expect(share.status == 0, "\(share)")
    #expect(share.output.contains("no application handles readlater: URLs"), "\(share)")
    #expect(try await fixture.storedURLs() == [])
    try await fixture.installEntry()

    let gio = try await Products.runCommandAsync(
      "gio", ["open", "readlater://import?count=1"], environment: fixture.environment)
    #expect(gio.status == 0, "\(gio)")
    #expect(
      try await waitUntil(timeout: .seconds(30), every: .milliseconds(50)) {
        try await fixture.storedURLs() == ["https://example.com/gio"]
      })
    #expect(
      try await waitUntil(timeout: .seconds(30), every: .milliseconds(50)) {
        try await fixture.ownerProcess(connection) == nil
      })

    // GLib's own client of org.freedesktop.Application knows it and runs its action.
    let apps = try await Products.runCommandAsync(
      "gapplication", ["list-apps"], environment: fixture.environment)
    #expect(apps.output.split(separator: "\n").contains("org.notifybus.ReadLater"), "\(apps)")
    let action = try await Products.runCommandAsync(
      "gapplication", ["action", "org.notifybus.ReadLater", "import"],
      environment: fixture.environment)
    #expect(action.status == 0, "\(action)")
    await connection.close()
  }

  @Test func aURLOfAnotherSchemeIsRefusedAndNothingIsStored() async throws {
    let fixture = try await ActivationFixture(idleTimeout: 60)
    let connection = try await BusConnection.connect(to: .address(fixture.bus.address))
    // A share waits in the spool (stored with no handler installed).
    fixture.removeEntry()
    #expect(try await fixture.share("https://example.com/waiting").status == 0)

    // On the command line: exit 64, the URL named, no name taken, nothing drained.
    for url in [
      "nosuchscheme://import?count=1", "readlater://delete", "readlater://import?count=x",
    ] {
      let refused = try await fixture.run("readlater", ["open", url])
      #expect(refused.status == 64, "\(refused)")
      #expect(refused.error.contains(url), "\(refused)")
    }
    #expect(try await fixture.ownerProcess(connection) == nil)
    #expect(try await fixture.storedURLs() == [])

    // Over D-Bus to a running instance: InvalidArgs naming the URL; it keeps running.
    let app = try fixture.spawnReadLater([
      "--idle-timeout", "60", "--bus", fixture.bus.address.rawValue,
    ])
    defer {
      app.kill(SIGTERM)
      app.wait()
    }
    #expect(
      try await waitUntil(timeout: .seconds(30)) {
        try await fixture.ownerProcess(connection) != nil
      })
    // It drained the waiting share at start.
    #expect(
      try await waitUntil(timeout: .seconds(30)) {
        try await fixture.storedURLs() == ["https://example.com/waiting"]
      })
    await #expect {
      _ = try await connection.call(
        ApplicationInterface.call(
          ApplicationInterface.open, to: ActivationFixture.id,
          body: [.array(elementType: "s", [.string("nosuchscheme://x")]), .dictionary([:])]))
    } throws: { error in
      (error as? DBusError)?.name == .invalidArgs && "\(error)".contains("nosuchscheme://x")
    }
    await #expect {
      _ = try await connection.call(
        ApplicationInterface.call(
          ApplicationInterface.open, to: ActivationFixture.id, body: [.string("x")]))
    } throws: {
      ($0 as? DBusError)?.name == .invalidArgs && "\($0)".contains("takes (asa{sv}), not (s)")
    }
    #expect(try await fixture.ownerProcess(connection) == UInt32(app.pid))

    // The extension side: no application handles the scheme.
    await #expect {
      try await URLOpener.open(
        URL(string: "nosuchscheme://x")!, on: connection,
        directories: ApplicationDirectories(
          dataDirectories: [fixture.root + "/data-home"], configDirectories: []))
    } throws: { error in
      (error as? ActivationError)?.code == .noHandler
        && "\(error)".contains("No installed application handles nosuchscheme: URLs")
    }
    await connection.close()
  }

  @Test func anEntryWithoutDBusActivationOpensThroughTheDesktopsHandler() async throws {
    guard access("/usr/bin/gio", X_OK) == 0 else { return }
    let fixture = try await ActivationFixture()
    try await fixture.installEntry { entry in
      entry.replacing("DBusActivatable=true", with: "DBusActivatable=false")
        .replacing("open %U", with: "open --idle-timeout 1 %U")
    }
    let connection = try await BusConnection.connect(to: .address(fixture.bus.address))
    let share = try await fixture.share("https://example.com/exec")
    #expect(share.status == 0, "\(share)")
    #expect(
      share.output.contains(
        "opened readlater://import?count=1 with the desktop's handler "
          + "(gio open readlater://import?count=1) for org.notifybus.ReadLater.desktop"),
      "\(share)")
    // gio ran the entry's Exec line: a readlater of its own, not one the bus started.
    #expect(
      try await waitUntil(timeout: .seconds(30), every: .milliseconds(50)) {
        try await fixture.storedURLs() == ["https://example.com/exec"]
      })
    await connection.close()
  }

  @Test func anActivatableEntryWithoutAServiceFileIsAnActivationError() async throws {
    let fixture = try await ActivationFixture()
    unlink(fixture.bus.serviceDirectory + "/org.notifybus.ReadLater.service")
    let connection = try await BusConnection.connect(to: .address(fixture.bus.address))
    await #expect {
      try await URLOpener.open(
        URL(string: "readlater://import?count=1")!, on: connection,
        directories: ApplicationDirectories(
          dataDirectories: [fixture.root + "/data-home"], configDirectories: []))
    } throws: { error in
      guard let error = error as? ActivationError, case .dbus(let cause)? = error.cause else {
        return false
      }
      return error.code == .activationFailed && cause.name == .serviceUnknown
        && error.message.contains("Cannot start org.notifybus.ReadLater")
    }
    await connection.close()
  }
}
