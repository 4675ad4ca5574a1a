import BusTestSupport
import ExtensionItems
import Foundation
import HandoffExamples
import SystemSupport
import TestTraits
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The handoff with real processes: `share-extension` and `handoff-stress` as extensions,
/// `readlater` as the app, on a private bus, with and without notifyd.
@Suite(.blocking, .enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(5)))
struct HandoffProcessTests {
  static func ids(_ list: [[String: Any]]) -> [String] { list.compactMap { $0["id"] as? String } }
  static func urls(_ list: [[String: Any]]) -> [String] { list.compactMap { $0["url"] as? String } }

  @Test func aThousandSharesFromFourExtensionsAreStoredExactlyOnce() throws {
    let fixture = try HandoffFixture()
    let app = try fixture.spawn("readlater", ["watch", "--count", "1000", "--timeout", "240"])
    defer {
      app.kill(SIGKILL)
      _ = app.wait(milliseconds: 5000)
    }
    let ready = readLines(app, milliseconds: 20_000) { $0.hasPrefix("app: watching") }
    #expect(ready.last?.hasPrefix("app: watching") == true)
    var extensions: [Subprocess] = []
    defer {
      for process in extensions {
        process.kill(SIGKILL)
        _ = process.wait(milliseconds: 5000)
      }
    }
    for worker in 0..<4 {
      extensions.append(try fixture.spawn("handoff-stress", ["250", "p\(worker)"]))
    }
    let output = app.readToEnd(milliseconds: 240_000)
    #expect(app.wait(milliseconds: 10_000) == .exited(0), "\(output.error)")
    for process in extensions {
      let result = process.readToEnd(milliseconds: 30_000)
      #expect(process.wait(milliseconds: 10_000) == .exited(0), "\(result.error)")
    }
    let list = try fixture.readingList()
    let expected = Set((0..<4).flatMap { w in (0..<250).map { "https://example.com/p\(w)/\($0)" } })
    #expect(list.count == 1000)
    #expect(Set(Self.ids(list)).count == 1000)
    #expect(Set(Self.urls(list)) == expected)
    #expect(try fixture.pendingInSpool() == 0)
  }

  @Test func sharesMadeWhileTheAppIsNotRunningAreDrainedAtLaunch() throws {
    let fixture = try HandoffFixture()
    for index in 0..<8 {
      let result = try fixture.run(
        "share-extension",
        ["--url", "https://example.com/offline/\(index)", "--title", "Offline \(index)"])
      #expect(result.status == 0, "\(result)")
    }
    #expect(try fixture.pendingInSpool() == 8)
    let app = try fixture.run(
      "readlater", ["watch", "--count", "8", "--timeout", "60"], timeout: 90)
    #expect(app.status == 0, "\(app)")
    let list = try fixture.readingList()
    #expect(Self.urls(list) == (0..<8).map { "https://example.com/offline/\($0)" })
    #expect(list.map { $0["title"] as? String } == (0..<8).map { "Offline \($0)" })
  }

  @Test func anAppKilledMidDrainLosesAndDuplicatesNothing() throws {
    let fixture = try HandoffFixture()
    let total = 300
    let producer = try fixture.run("handoff-stress", ["\(total)", "k"], timeout: 120)
    #expect(producer.status == 0, "\(producer)")
    let app = try fixture.spawn("readlater", ["watch", "--timeout", "120"])
    var stored = 0
    let deadline = MonotonicClock.now + 60_000_000_000
    while stored < 40, MonotonicClock.now < deadline,
      let line = app.readLine(milliseconds: 10_000)
    {
      if line.hasPrefix("app: stored") { stored += 1 }
    }
    app.kill(SIGKILL)
    #expect(app.wait(milliseconds: 10_000) == .signaled(SIGKILL))
    #expect(stored == 40)

    let before = try fixture.readingList().count
    #expect(before >= 40 && before < total)
    let restart = try fixture.run(
      "readlater", ["watch", "--count", "\(total - before)", "--timeout", "120"], timeout: 150)
    #expect(restart.status == 0, "\(restart)")
    let list = try fixture.readingList()
    #expect(list.count == total)
    #expect(Set(Self.ids(list)).count == total)
    #expect(Set(Self.urls(list)) == Set((0..<total).map { "https://example.com/k/\($0)" }))
    #expect(try fixture.pendingInSpool() == 0)
  }

  @Test func theActivationRuleRefusesWithTheRuleThatFailed() throws {
    let fixture = try HandoffFixture()
    let pdf = fixture.bus.directory + "/paper.pdf"
    let png = fixture.bus.directory + "/photo.png"
    try Data("%PDF-1.4".utf8).write(to: URL(fileURLWithPath: pdf))
    try Data([0x89, 0x50, 0x4E, 0x47]).write(to: URL(fileURLWithPath: png))
    let cases: [([String], String)] = [
      (
        ["--url", "https://example.com/1", "--url", "https://example.com/2"],
        "NSExtensionActivationSupportsWebURLWithMaxCount is 1, but 2 web URLs were shared"
      ),
      (["--url", "https://example.com/1", "--file", pdf], "(com.adobe.pdf) is not accepted"),
      (["--image", png], "the rule has no NSExtensionActivationSupportsImageWithMaxCount"),
      (
        ["--rule", "images"] + Array(repeating: ["--image", png], count: 6).flatMap { $0 },
        "NSExtensionActivationSupportsImageWithMaxCount is 5, but 6 images were shared"
      ),
      (["--title", "nothing"], "Nothing to share"),
    ]
    for (arguments, message) in cases {
      let result = try fixture.run("share-extension", arguments)
      #expect(result.status == 65, "\(arguments): \(result)")
      #expect(result.error.contains(message), "\(arguments): \(result.error)")
    }
    #expect(try fixture.pendingInSpool() == 0)
    let five = try fixture.run(
      "share-extension",
      ["--rule", "images", "--text", "five"]
        + Array(repeating: ["--image", png], count: 5).flatMap { $0 })
    #expect(five.status == 0, "\(five)")
    #expect(try fixture.pendingInSpool() == 1)
  }

  @Test func aManifestFileAndTheWatchTimeoutBehaveAsDocumented() throws {
    let fixture = try HandoffFixture()
    let root = URL(fileURLWithPath: Repository.root)
    let png = fixture.bus.directory + "/photo.png"
    try Data([0x89, 0x50, 0x4E, 0x47]).write(to: URL(fileURLWithPath: png))
    let manifest = root.appendingPathComponent(
      "Examples/HandoffExamples/Manifests/Info-Images.plist"
    ).path
    let accepted = try fixture.run(
      "share-extension", ["--manifest", manifest, "--url", "https://example.com/m", "--image", png])
    #expect(accepted.status == 0, "\(accepted)")
    // One share waits; asking for two ends by the timeout, with status 2.
    let app = try fixture.run("readlater", ["watch", "--count", "2", "--timeout", "1"])
    #expect(app.status == 2, "\(app)")
    #expect(app.output.contains("app: stored \"https://example.com/m\""))
    let list = try fixture.readingList()
    let files = list.first?["attachments"] as? [[String: Any]] ?? []
    #expect(files.count == 1)
    let path = files.first?["path"] as? String ?? ""
    #expect(path.hasPrefix(fixture.groupsDirectory))
    #expect(FileManager.default.contents(atPath: path) == Data([0x89, 0x50, 0x4E, 0x47]))
  }

  /// Issue 17 item 8: with SIGPIPE ignored, readlater stops at the first line it cannot
  /// write, with the documented message and status 1, rather than at its timeout.
  @Test func readlaterStopsWhenItsOutputCloses() throws {
    let fixture = try HandoffFixture()
    let status = fixture.bus.directory + "/readlater.status"
    let error = fixture.bus.directory + "/readlater.err"
    let script =
      "trap '' PIPE; { '\(Products.path("readlater"))' watch --timeout 120 2>'\(error)'; "
      + "echo $? >'\(status)'; } | head -1"
    var environment = Products.currentEnvironment()
    environment.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")
    for (key, value) in fixture.environment { environment[key] = value }
    let shell = try Subprocess.spawn(
      "/bin/sh", arguments: ["-c", script], environment: environment)
    #expect(shell.readLine(milliseconds: 30_000)?.hasPrefix("app: watching") == true)
    let share = try fixture.run("share-extension", ["--url", "https://example.com/pipe"])
    #expect(share.status == 0, "\(share)")
    _ = shell.readToEnd(milliseconds: 60_000)
    #expect(shell.wait(milliseconds: 5_000) == .exited(0), "readlater did not stop")
    #expect(try Products.runCommand("cat", [status]).output == "1\n")
    #expect(
      try Products.runCommand("cat", [error]).output
        == "Error: Unable to write to standard output: Broken pipe (errno 32)\n")
  }

  @Test func theHandoffNeedsNoNotifyd() throws {
    let fixture = try HandoffFixture()
    // notifyd's name is activatable but its daemon cannot start: nothing may depend on it.
    let service = """
      [D-BUS Service]
      Name=org.notifybus.Notify1
      Exec=/bin/false
      """
    try service.write(
      toFile: fixture.bus.serviceDirectory + "/org.notifybus.Notify1.service", atomically: true,
      encoding: .utf8)
    try shareOneURLWhileTheAppRuns(fixture, url: "https://example.com/no-notifyd")
  }

  @Test func theHandoffWorksWithNotifydRunning() async throws {
    let fixture = try HandoffFixture()
    let notifyd = try fixture.spawn("notifyd", ["--no-persist"])
    defer {
      notifyd.kill(SIGKILL)
      _ = notifyd.wait(milliseconds: 5000)
    }
    // notifyd answers: state set by one process is read by another.
    try await waitUntil(every: .milliseconds(50)) {
      let set = try fixture.run("notifyutil", ["-s", "group.example.saved", "7"])
      return set.status == 0 && set.output.isEmpty
    }
    #expect(
      try fixture.run("notifyutil", ["-g", "group.example.saved"]).output
        == "group.example.saved 7\n")
    try shareOneURLWhileTheAppRuns(fixture, url: "https://example.com/with-notifyd")
  }

  /// Starts the app, shares `url` through the extension, and expects the app to store it
  /// and stop.
  func shareOneURLWhileTheAppRuns(
    _ fixture: HandoffFixture, url: String, sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let app = try fixture.spawn("readlater", ["watch", "--count", "1", "--timeout", "60"])
    defer {
      app.kill(SIGKILL)
      _ = app.wait(milliseconds: 5000)
    }
    _ = readLines(app, milliseconds: 20_000) { $0.hasPrefix("app: watching") }
    let share = try fixture.run("share-extension", ["--url", url, "--text", "hello"])
    #expect(share.status == 0, "\(share)", sourceLocation: sourceLocation)
    let output = app.readToEnd(milliseconds: 60_000)
    #expect(
      app.wait(milliseconds: 10_000) == .exited(0), "\(output)", sourceLocation: sourceLocation)
    #expect(output.output.contains("app: stored \"\(url)\""), sourceLocation: sourceLocation)
    #expect(Self.urls(try fixture.readingList()) == [url], sourceLocation: sourceLocation)
  }

  @Test func theShippedInfoPlistsAreTheBuiltInOnes() throws {
    let root = URL(fileURLWithPath: Repository.root)
    for (file, choice) in [("Info.plist", "seed"), ("Info-Images.plist", "images")] {
      let shipped = try Data(
        contentsOf: root.appendingPathComponent("Examples/HandoffExamples/Manifests/" + file))
      let choice = try #require(ShareManifests.Choice(rawValue: choice))
      let builtIn = try Data(contentsOf: ShareManifests.url(choice))
      #expect(shipped == builtIn)
      #expect(ShareManifests.manifest(choice) == (try ExtensionManifest(propertyList: shipped)))
    }
  }
}
