import Activation
import AppGroups
import BusTestSupport
import DBus
import ExtensionItems
import Foundation
import Handoff
import Notify
import SystemSupport

#if canImport(Glibc)
  import Glibc
#endif

/// The share journey's far end: share → stored when the share has to start the app (D-Bus
/// activation of `readlater open`) against the same with the app already running, on a
/// private bus holding readlater's service file and with its desktop entry installed.
///
/// One iteration is what share-extension does after its rule check: `completeRequest`
/// (encode, durable spool entry, doorbell) then `open(readlater://import?count=N)`, which
/// finds the handler in the desktop entries, calls `StartServiceByName` and `Open`; readlater
/// answers `Open` once its drain has stored the item in SQLite, so the time runs until the
/// item is stored. Cold iterations wait for the previous instance to give up its name (an
/// idle timeout of 0.2 s); warm ones reach one instance started before.
enum ActivationSuite: BenchmarkSuite {
  static let name = "activation"
  static let id: ApplicationID = "org.notifybus.ReadLater"

  static func run(scale: Double) async throws -> [BenchmarkRow] {
    let readlater = Products.path("readlater")
    guard access(readlater, X_OK) == 0 else {
      FileHandle.standardError.write(
        Data("activation: skipping: build readlater too (swift build -c release)\n".utf8))
      return []
    }
    let bus = try PrivateBus()
    let root = bus.directory
    for directory in ["groups", "data-home/applications"] {
      try FileManager.default.createDirectory(
        atPath: root + "/" + directory, withIntermediateDirectories: true)
    }
    let entry = try String(
      contentsOfFile: Repository.path("Protocol/applications/org.notifybus.ReadLater.desktop"),
      encoding: .utf8)
    try entry.replacing("/usr/bin/readlater", with: readlater).write(
      toFile: root + "/data-home/applications/org.notifybus.ReadLater.desktop", atomically: true,
      encoding: .utf8)
    try "[D-BUS Service]\nName=\(id)\nExec=\(readlater) open --idle-timeout 0.2\n".write(
      toFile: bus.serviceDirectory + "/\(id.serviceFileName)", atomically: true, encoding: .utf8)
    let connection = try await BusConnection.connect(to: .address(bus.address))
    defer { Task { await connection.close() } }
    try await bus.updateActivationEnvironment(["NOTIFYBUS_GROUPS_DIR": root + "/groups"])
    let directories = ApplicationDirectories(
      dataDirectories: [root + "/data-home"], configDirectories: [])
    let sender = try HandoffSender(
      container: GroupContainer(
        identifier: GroupIdentifier(validating: "group.example.readlater"),
        groupsDirectory: root + "/groups"),
      notification: NotifyName("group.example.saved"),
      center: try await NotifyCenter.connect(to: .address(bus.address)))
    let count = max(5, Int(20 * scale))
    var serial = 0

    /// One share and its open; the milliseconds it took.
    func share(expectStarted: Bool) async throws -> Double {
      serial += 1
      let item = ExtensionItem(
        attributedTitle: AttributedText("Activation benchmark \(serial)"),
        attachments: [ItemProvider(url: URL(string: "https://example.com/activation/\(serial)")!)])
      let start = MonotonicClock.now
      let context = ExtensionContext(inputItems: [item], sender: sender)
      try await context.completeRequest(returningItems: context.inputItems)
      let opening = try await context.open(
        URL(string: "readlater://import?count=1")!, directories: directories)
      let elapsed = Double(MonotonicClock.now - start) / 1e6
      guard case .dbus(_, let started) = opening.route, started == expectStarted else {
        throw DBusError(.failed, "expected started=\(expectStarted), got \(opening)")
      }
      guard try sender.spool.pendingCount() == 0 else {
        throw DBusError(.failed, "readlater answered Open before draining")
      }
      return elapsed
    }
    func waitUntilStopped() async throws {
      let deadline = ContinuousClock.now + .seconds(30)
      while (try? await connection.owner(of: id.busName)) != nil {
        guard ContinuousClock.now < deadline else {
          throw DBusError(.failed, "readlater did not exit after its idle timeout")
        }
        try await Task.sleep(for: .milliseconds(20))
      }
    }

    // Not running: each share starts readlater, which exits 0.2 s after.
    var cold: [Double] = []
    for index in 0...count {
      try await waitUntilStopped()
      let time = try await share(expectStarted: true)
      if index > 0 { cold.append(time) }  // the first one warms the page cache
    }
    try await waitUntilStopped()

    // Running: one instance, started first.
    var environment = Products.currentEnvironment()
    environment["NOTIFYBUS_GROUPS_DIR"] = root + "/groups"
    let app = try Subprocess.spawn(
      readlater, arguments: ["open", "--idle-timeout", "600", "--bus", bus.address.rawValue],
      environment: environment, captureOutput: true)
    defer {
      app.kill(SIGTERM)
      app.wait()
    }
    let deadline = ContinuousClock.now + .seconds(30)
    while (try? await connection.owner(of: id.busName)) == nil {
      guard ContinuousClock.now < deadline else {
        throw DBusError(.failed, "readlater open did not take its name")
      }
      try await Task.sleep(for: .milliseconds(20))
    }
    var warm: [Double] = []
    for index in 0...count {
      let time = try await share(expectStarted: false)
      if index > 0 { warm.append(time) }
    }

    let coldFigures = Percentiles(cold)
    let warmFigures = Percentiles(warm)
    return [
      BenchmarkRow(
        name: "share→stored, app started by activation, p50", unit: "ms",
        subject: coldFigures[0.5], baselineName: "app running", baseline: warmFigures[0.5],
        higherIsBetter: false, target: nil),
      BenchmarkRow(
        name: "share→stored, app started by activation, p90", unit: "ms",
        subject: coldFigures[0.9], baselineName: "app running", baseline: warmFigures[0.9],
        higherIsBetter: false, target: nil),
    ]
  }
}
