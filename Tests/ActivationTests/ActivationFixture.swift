import Activation
import BusTestSupport
import DBus
import Foundation
import SystemSupport

/// Creates a directory and its missing parents.
func makeDirectories(_ path: String) {
  try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
}

struct FixtureError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// A private session bus whose service directory holds readlater's D-Bus service file, and
/// XDG directories of the test's own holding its desktop entry: readlater installed as a
/// package installs it, on a bus of its own.
final class ActivationFixture: Sendable {
  let bus: PrivateBus
  let root: String
  static let id: ApplicationID = "org.notifybus.ReadLater"

  /// - Parameters:
  ///   - idleTimeout: The activated readlater's `--idle-timeout`, in seconds.
  ///   - installEntry: Whether the desktop entry is installed in the test's XDG_DATA_HOME.
  init(idleTimeout: Double = 2, installEntry: Bool = true) async throws {
    bus = try PrivateBus()
    root = bus.directory
    for directory in [
      "groups", "data-home/applications", "data-dirs", "config-home", "config-dirs",
    ] {
      makeDirectories(root + "/" + directory)
    }
    let readlater = Products.path("readlater")
    let service = (readFile(Repository.path("Protocol/dbus/org.notifybus.ReadLater.service")) ?? "")
      .replacing(
        "Exec=/usr/bin/readlater open",
        with: "Exec=\(readlater) open --idle-timeout \(idleTimeout) --log \(root)/readlater.log"
      )
    writeFile(bus.serviceDirectory + "/org.notifybus.ReadLater.service", service)
    if installEntry { try await self.installEntry() }
    // What the bus passes to the programs it starts, as a desktop session sets it.
    try await bus.updateActivationEnvironment(activationEnvironment)
  }

  var entryPath: String { root + "/data-home/applications/org.notifybus.ReadLater.desktop" }

  /// Installs the desktop entry as Scripts/install does: the file, its Exec naming this
  /// build's readlater, then `update-desktop-database` (GIO finds handlers through the
  /// `mimeinfo.cache` it writes).
  func installEntry(_ edit: (String) -> String = { $0 }) async throws {
    let entry =
      (readFile(Repository.path("Protocol/applications/org.notifybus.ReadLater.desktop")) ?? "")
      .replacing("/usr/bin/readlater", with: Products.path("readlater"))
    writeFile(entryPath, edit(entry))
    let update = try await Products.runCommandAsync(
      "update-desktop-database", [root + "/data-home/applications"])
    guard update.status == 0 else {
      throw FixtureError("update-desktop-database failed: \(update)")
    }
  }

  /// Removes the desktop entry and the cache that names it.
  func removeEntry() {
    unlink(entryPath)
    unlink(root + "/data-home/applications/mimeinfo.cache")
  }

  /// The groups directory and XDG directories of this test, for every process.
  var activationEnvironment: [String: String] {
    [
      "NOTIFYBUS_GROUPS_DIR": root + "/groups",
      "XDG_DATA_HOME": root + "/data-home", "XDG_DATA_DIRS": root + "/data-dirs",
      "XDG_CONFIG_HOME": root + "/config-home", "XDG_CONFIG_DIRS": root + "/config-dirs",
    ]
  }

  /// The environment of the test's own children: the above, and this bus as the session bus.
  var environment: [String: String] {
    var environment = activationEnvironment
    environment["DBUS_SESSION_BUS_ADDRESS"] = bus.address.rawValue
    environment["NOTIFYBUS_BUS_ADDRESS"] = bus.address.rawValue
    return environment
  }

  func run(_ product: String, _ arguments: [String], timeout: Int = 60) async throws
    -> Products.Result
  {
    try await Products.runAsync(product, arguments, environment: environment, timeout: timeout)
  }

  func share(_ url: String) async throws -> Products.Result {
    try await run("share-extension", ["--url", url, "--title", "A page"])
  }

  /// The reading list's URLs, through `readlater list --json`.
  func storedURLs() async throws -> [String] {
    let result = try await run("readlater", ["list", "--json"])
    guard result.status == 0,
      let list = try JSONSerialization.jsonObject(with: Data(result.output.utf8))
        as? [[String: Any]]
    else { throw FixtureError("readlater list failed: \(result)") }
    return list.compactMap { $0["url"] as? String }
  }

  /// The process id of the connection that owns the application's name, or nil.
  func ownerProcess(_ connection: BusConnection) async throws -> UInt32? {
    guard let owner = try? await connection.owner(of: Self.id.busName) else { return nil }
    do throws(DBusError) {
      return try await connection.credentials(of: owner).processID
    } catch let error where error.name == .nameHasNoOwner {
      return nil  // the owner exited between the two calls (an idle app ending)
    }
  }

  /// Starts `readlater open` with this fixture's environment, and `overrides` (a nil value
  /// removes the variable).
  func spawnReadLater(_ arguments: [String], overrides: [String: String?] = [:]) throws
    -> Subprocess
  {
    var environment = Products.currentEnvironment()
    for (key, value) in self.environment { environment[key] = value }
    for (key, value) in overrides { environment[key] = value }
    return try Subprocess.spawn(
      Products.path("readlater"), arguments: ["open"] + arguments, environment: environment,
      captureOutput: true, captureError: true)
  }
}
