import AppGroups
import BusTestSupport
import DBus
import Foundation
import Handoff
import Notify
import SystemSupport

/// A private bus and a private groups directory for one test, removed afterwards.
final class HandoffFixture {
  let bus: PrivateBus
  let groupsDirectory: String
  static let group = "group.example.readlater"
  static let notification = "group.example.saved"

  init() throws {
    bus = try PrivateBus()
    groupsDirectory = bus.directory + "/groups"
  }

  /// The environment for child processes: this bus and this groups directory, and XDG
  /// directories of the test's own, so no desktop entry installed on the machine is
  /// found (share-extension opens `readlater:` URLs in the app they name).
  var environment: [String: String] {
    [
      "NOTIFYBUS_BUS_ADDRESS": bus.address.rawValue, "NOTIFYBUS_GROUPS_DIR": groupsDirectory,
      "XDG_DATA_HOME": bus.directory + "/data-home", "XDG_DATA_DIRS": bus.directory + "/data-dirs",
      "XDG_CONFIG_HOME": bus.directory + "/config-home",
      "XDG_CONFIG_DIRS": bus.directory + "/config-dirs",
    ]
  }

  func container() throws -> GroupContainer {
    try GroupContainer(
      identifier: GroupIdentifier(validating: Self.group), groupsDirectory: groupsDirectory)
  }

  func center() async throws -> NotifyCenter {
    try await NotifyCenter.connect(to: .address(bus.address))
  }

  /// A sender whose segment is taken (it takes one when it is made, on a Dispatch thread),
  /// so that the container's files change only with what it stores.
  func sender(spoolName: String = HandoffSender.defaultSpoolName) async throws -> HandoffSender {
    let sender = try HandoffSender(
      container: container(), notification: NotifyName(Self.notification),
      center: await center(), spoolName: spoolName)
    sender.spool.waitForSegmentPreparation()
    return sender
  }

  func importer(deduplication: Deduplication? = nil) async throws -> PendingImporter {
    try PendingImporter(
      container: container(), notification: NotifyName(Self.notification),
      center: await center(), deduplication: deduplication)
  }

  /// Starts a product with this fixture's environment, capturing its output.
  func spawn(_ product: String, _ arguments: [String]) throws -> Subprocess {
    var environment = Products.currentEnvironment()
    environment.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")
    for (key, value) in self.environment { environment[key] = value }
    return try Subprocess.spawn(
      Products.path(product), arguments: arguments, environment: environment,
      captureOutput: true, captureError: true)
  }

  /// Runs a product to completion (killed after `timeout` seconds), under `umask` when
  /// given.
  func run(
    _ product: String, _ arguments: [String], timeout: Int = 60, umask: mode_t? = nil
  ) throws -> Products.Result {
    var environment = self.environment
    environment["DBUS_SESSION_BUS_ADDRESS"] = ""
    return try Products.run(
      product, arguments, environment: environment, timeout: timeout, umask: umask)
  }

  /// The reading list, through `readlater list --json`.
  func readingList() throws -> [[String: Any]] {
    let result = try run("readlater", ["list", "--json"])
    guard result.status == 0,
      let list = try JSONSerialization.jsonObject(with: Data(result.output.utf8))
        as? [[String: Any]]
    else { throw FixtureError("readlater list failed: \(result)") }
    return list
  }

  /// Entries waiting in the spool's `new/` and `cur/` directories.
  func pendingInSpool() throws -> Int {
    try Spool(container: container(), name: HandoffSender.defaultSpoolName).pendingCount()
  }
}

struct FixtureError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Reads lines from a child until one satisfies `predicate`, or `milliseconds` pass.
func readLines(
  _ process: Subprocess, milliseconds: Int, until predicate: (String) -> Bool
) -> [String] {
  var lines: [String] = []
  let deadline = MonotonicClock.now + milliseconds * 1_000_000
  while MonotonicClock.now < deadline {
    let left = (deadline - MonotonicClock.now) / 1_000_000
    guard let line = process.readLine(milliseconds: max(1, left)) else { break }
    lines.append(line)
    if predicate(line) { break }
  }
  return lines
}
