import BusTestSupport
import Foundation
import SystemSupport
import TestTraits
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `share-extension` as a desktop launches it: its desktop entries, the arguments a file
/// manager passes (`%U`), bad arguments, and the compose sheet driven in a real `tmux`.
@Suite(.blocking, .enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(5)))
struct ShareExtensionDesktopTests {
  static func has(_ tool: String) -> Bool {
    ["/usr/bin/", "/bin/"].contains { access($0 + tool, X_OK) == 0 }
  }

  // MARK: Desktop entries

  @Test(
    .enabled(if: has("desktop-file-validate"), "desktop-file-utils is not installed"),
    arguments: [
      (["--rule", "seed"], "org.notifybus.example.readlater.share"),
      (["--rule", "images"], "org.notifybus.example.readlater.share-images"),
    ])
  func theDesktopEntriesPassDesktopFileValidate(_ rule: [String], _ identifier: String)
    async throws
  {
    let entry = try await Products.runAsync(
      "share-extension", ["--desktop-entry", "--exec", "/usr/bin/share-extension"] + rule)
    #expect(entry.status == 0, "\(entry)")
    #expect(
      entry.output.contains("\nExec=/usr/bin/share-extension \(rule.joined(separator: " ")) %U\n"))
    #expect(entry.output.contains("\nMimeType=text/plain;"))
    #expect(entry.output.contains("x-scheme-handler/http;x-scheme-handler/https;\n"))
    #expect(entry.output.contains("image/png;") == (rule[1] == "images"))
    let directory = TemporaryDirectory("desktop-entry")
    let path = directory.path(identifier + ".desktop")
    writeFile(path, entry.output)
    let validation = try await Products.runCommandAsync("desktop-file-validate", [path])
    #expect(validation.status == 0, "\(validation)")
    #expect(validation.output.isEmpty && validation.error.isEmpty, "\(validation)")
  }

  @Test func aDesktopEntryNeedsARuleThatAcceptsSomethingAndOptionsGoTogether() async throws {
    let directory = TemporaryDirectory("desktop-entry-refused")
    let manifest = directory.path("Info.plist")
    writeFile(
      manifest,
      """
      <?xml version="1.0" encoding="UTF-8"?>
      <plist version="1.0"><dict>
      <key>CFBundleIdentifier</key><string>org.example.none</string>
      <key>NSExtension</key><dict>
        <key>NSExtensionPointIdentifier</key><string>com.apple.share-services</string>
        <key>NSExtensionAttributes</key><dict>
          <key>NSExtensionActivationRule</key><string>FALSEPREDICATE</string></dict>
      </dict></dict></plist>
      """)
    let refused = try await Products.runAsync(
      "share-extension", ["--desktop-entry", "--manifest", manifest])
    #expect(refused.status == 64, "\(refused)")
    #expect(refused.error.contains("the activation rule accepts no file or URL"), "\(refused)")
    let stray = try await Products.runAsync("share-extension", ["--exec", "/x", "https://a.b/"])
    #expect(stray.status == 64, "\(stray)")
    #expect(stray.error.contains("--exec is used with --desktop-entry only"), "\(stray)")
    let mixed = try await Products.runAsync(
      "share-extension", ["--desktop-entry", "https://a.b/"])
    #expect(mixed.status == 64, "\(mixed)")
    #expect(mixed.error.contains("--desktop-entry shares nothing: drop 'https://a.b/'."))
    let both = try await Products.runAsync(
      "share-extension", ["--compose", "--no-compose", "https://a.b/"])
    #expect(both.status == 64, "\(both)")
    #expect(both.error.contains("--compose and --no-compose cannot be used together"))
    // --compose with no terminal at all (setsid: no controlling terminal, no /dev/tty).
    if Self.has("setsid") {
      let alone = try await Products.runCommandAsync(
        "setsid", ["-w", Products.path("share-extension"), "--compose", "https://a.b/"])
      #expect(alone.status == 64, "\(alone)")
      #expect(alone.error.contains("--compose: no terminal"), "\(alone)")
    }
  }

  // MARK: Arguments

  /// Files and URLs as a file manager passes them: a `file://` URL of a PNG named `.jpg`
  /// (typed by its content), a path, a web URL.
  @Test func filesAndURLsAsArgumentsAreTypedAndStored() async throws {
    let fixture = try HandoffFixture()
    let png = fixture.bus.directory + "/holiday photo.jpg"
    writeFile(png, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3])
    let notes = fixture.bus.directory + "/notes"
    writeFile(notes, "Read the concurrency chapter first.\n")
    let share = try await fixture.runAsync(
      "share-extension",
      [
        "--rule", "images", "--title", "Docs",
        "file://" + png.replacingOccurrences(of: " ", with: "%20"), notes,
        "https://www.swift.org/documentation/",
      ])
    #expect(share.status == 0, "\(share)")
    #expect(share.output.contains("(1 URL, 1 text, 1 image)"), "\(share)")
    let list = try await fixture.readingListAfterDraining(count: 1)
    #expect(list.first?["url"] as? String == "https://www.swift.org/documentation/")
    let files = list.first?["attachments"] as? [[String: Any]] ?? []
    #expect(files.map { $0["name"] as? String } == ["holiday photo.jpg", "notes"])
    #expect(files.map { $0["type"] as? String } == ["public.png", "public.utf8-plain-text"])
  }

  /// Each bad argument is refused with its class's status, nothing stored.
  ///
  /// The message names the argument and what is wrong; the status is 64 for a malformed
  /// argument or an unknown scheme, 66 for a missing file, 4 for one that is not a regular
  /// file, 65 for a refusal by the rule. None blocks (the FIFO is not opened for reading).
  /// With several bad arguments the first decides; the rule is checked only once all are good.
  @Test func badArgumentsAreRefusedAndNothingIsStored() async throws {
    let fixture = try HandoffFixture()
    let directory = fixture.bus.directory
    let fifo = directory + "/pipe.png"
    #expect(mkfifo(fifo, 0o600) == 0)
    let folder = directory + "/folder"
    #expect(mkdir(folder, 0o700) == 0)
    let pdf = directory + "/paper.pdf"
    writeFile(pdf, "%PDF-1.4\n")
    let missing = directory + "/missing.png"
    let cases: [([String], Int32, String)] = [
      (
        ["gopher://example.com/x"], 64,
        "Error: 'gopher://example.com/x': the scheme 'gopher' is not one the extension takes"
      ),
      (["readlater://import?count=1"], 64, "the scheme 'readlater' is not one"),
      (["https://exa mple.com/"], 64, "percent-encode spaces and non-ASCII characters"),
      ([missing], 66, "Error: '\(missing)': no such file."),
      (["--file", missing], 66, "Error: --file: '\(missing)': no such file."),
      ([pdf], 65, "Attachment 1 (com.adobe.pdf) is not accepted: the rule has no "),
      ([folder], 4, "Error: '\(folder)': it is a directory, not a regular file."),
      (["file://" + fifo], 4, "Error: '\(fifo)': it is a FIFO (named pipe), not a regular file."),
      // The first bad argument decides; the rule waits for a well-formed item.
      ([missing, folder], 66, "no such file."),
      ([folder, missing], 4, "it is a directory"),
      ([pdf, missing], 66, "no such file."),
      ([missing, "gopher://x/"], 66, "no such file."),
      (["gopher://x/", missing], 64, "the scheme 'gopher'"),
      // Options come before the files.
      (["--group", "../x", missing], 64, "--group: "),
    ]
    for (arguments, status, message) in cases {
      let result = try await fixture.runAsync("share-extension", ["--no-compose"] + arguments)
      #expect(result.status == status, "\(arguments): \(result)")
      #expect(result.error.contains(message), "\(arguments): \(result.error)")
      // A usage error shows the usage; a refused input does not.
      #expect(result.error.contains("Usage:") == (status == 64), "\(arguments): \(result)")
      #expect(result.output.isEmpty, "\(arguments): \(result)")
    }
    #expect(try fixture.pendingInSpool() == 0)
  }

  // MARK: The compose sheet in tmux

  @Test(.enabled(if: has("tmux"), "tmux is not installed"))
  func postIsRefusedOnEmptyTextThenStoresTheText() async throws {
    let fixture = try HandoffFixture()
    let session = try await TmuxSession(
      fixture, ["--title", "Swift documentation", "https://www.swift.org/documentation/"])
    defer { session.close() }
    let sheet = try await session.waitFor("Text:")
    #expect(sheet.contains("Text:"), "\(sheet)")
    #expect(sheet.contains("Read Later"))
    #expect(sheet.contains("[ Cancel ]") && sheet.contains("[ Post ]"))
    #expect(sheet.contains("Title: Swift documentation"))
    #expect(sheet.contains("URL:   https://www.swift.org/documentation/"))
    #expect(sheet.contains("  - https://www.swift.org/documentation/ (public.url)"))

    try await session.send(["Enter"])
    let refused = try await session.waitFor(ComposeSheetText.emptyTextReason)
    #expect(refused.contains(ComposeSheetText.emptyTextReason), "\(refused)")
    #expect(!refused.contains("EXIT="))
    #expect(try fixture.pendingInSpool() == 0)

    try await session.type("Read the concurrency chapterX")
    try await session.send(["BSpace"] + Array(repeating: "Left", count: 7))
    try await session.type("first ")
    try await session.send(["End"])
    let edited = try await session.waitFor("Text: Read the concurrency first chapter")
    #expect(edited.contains("Text: Read the concurrency first chapter"), "\(edited)")
    try await session.send(["Enter"])
    let posted = try await session.waitFor("EXIT=0")
    #expect(posted.contains("EXIT=0"), "\(posted)")
    #expect(posted.contains("extension: stored share "))
    let list = try await fixture.readingListAfterDraining(count: 1)
    #expect(list.first?["title"] as? String == "Swift documentation")
    #expect(list.first?["text"] as? String == "Read the concurrency first chapter")
  }

  @Test(.enabled(if: has("tmux"), "tmux is not installed"))
  func cancelStoresNothingAndExitsThree() async throws {
    let fixture = try HandoffFixture()
    let session = try await TmuxSession(fixture, ["https://example.com/cancelled"])
    defer { session.close() }
    let sheet = try await session.waitFor("Text:")
    #expect(sheet.contains("Text:"), "\(sheet)")
    try await session.type("never posted")
    // Tab twice reaches Cancel; Enter presses it.
    try await session.send(["Tab", "Tab"])
    let focused = try await session.waitFor("> Cancel <")
    #expect(focused.contains("> Cancel <"), "\(focused)")
    try await session.send(["Enter"])
    let screen = try await session.waitFor("STTY=")
    #expect(screen.contains("EXIT=3"), "\(screen)")
    #expect(screen.contains("extension: cancelled; nothing was stored"))
    // The terminal is back in canonical mode with echo: the shell's stty sees it.
    #expect(screen.contains("STTY=icanon echo"), "\(screen)")
    #expect(try fixture.pendingInSpool() == 0)
  }

  @Test(.enabled(if: has("tmux"), "tmux is not installed"))
  func escapeAndSIGTERMCancelAndRestoreTheTerminal() async throws {
    let fixture = try HandoffFixture()
    let escape = try await TmuxSession(fixture, ["https://example.com/escape"])
    defer { escape.close() }
    let sheet = try await escape.waitFor("Text:")
    #expect(sheet.contains("Text:"), "\(sheet)")
    // A resized terminal gets the sheet drawn to its new width.
    try await escape.tmux(["resize-window", "-x", "50", "-y", "20"])
    let narrow = try await escape.waitFor("\n" + String(repeating: "-", count: 50) + "\n")
    #expect(narrow.contains("\n" + String(repeating: "-", count: 50) + "\n"), "\(narrow)")
    try await escape.send(["Escape"])
    let cancelled = try await escape.waitFor("STTY=")
    #expect(cancelled.contains("EXIT=3"), "\(cancelled)")

    let killed = try await TmuxSession(fixture, ["https://example.com/killed"])
    defer { killed.close() }
    let open = try await killed.waitFor("Text:")
    #expect(open.contains("Text:"), "\(open)")
    try await killed.type("half")
    _ = try await killed.waitFor("Text: half")
    try await killed.signalTheExtension(SIGTERM)
    let screen = try await killed.waitFor("STTY=")
    #expect(screen.contains("EXIT=143"), "\(screen)")
    #expect(screen.contains("STTY=icanon echo"), "\(screen)")
    #expect(try fixture.pendingInSpool() == 0)
  }
}

/// The sheet's sentences the tests look for (the ComposeSheet module is not a dependency
/// of this test target; `ComposeSheetTests` checks the same constant).
enum ComposeSheetText {
  static let emptyTextReason = "Post needs some text: the text is empty."
}

extension HandoffFixture {
  /// ``run(_:_:timeout:umask:)`` off the concurrency pool.
  func runAsync(_ product: String, _ arguments: [String], timeout: Int = 60) async throws
    -> Products.Result
  {
    var environment = self.environment
    environment["DBUS_SESSION_BUS_ADDRESS"] = ""
    return try await Products.runAsync(
      product, arguments, environment: environment, timeout: timeout)
  }

  /// Drains `count` shares with `readlater watch`, then returns the reading list.
  func readingListAfterDraining(count: Int) async throws -> [[String: Any]] {
    let app = try await runAsync("readlater", ["watch", "--count", "\(count)", "--timeout", "30"])
    guard app.status == 0 else { throw FixtureError("readlater watch failed: \(app)") }
    let list = try await runAsync("readlater", ["list", "--json"])
    guard list.status == 0,
      let items = try JSONSerialization.jsonObject(with: Data(list.output.utf8))
        as? [[String: Any]]
    else { throw FixtureError("readlater list failed: \(list)") }
    return items
  }
}

/// `share-extension` in a detached `tmux` session of its own.
///
/// A private server socket, 80 by 24, the fixture's bus and groups directory. When the
/// extension exits, the pane shows `EXIT=<status>` and `STTY=<icanon or -icanon> <echo or
/// -echo>`.
final class TmuxSession: Sendable {
  let socket: String
  let environment: [String: String]

  init(_ fixture: HandoffFixture, _ arguments: [String]) async throws {
    socket = "notifybus-share-\(getpid())-\(UUID().uuidString.prefix(8))"
    var environment = Products.currentEnvironment()
    environment.removeValue(forKey: "TMUX")
    environment.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")
    environment["TERM"] = "xterm-256color"
    environment["LC_ALL"] = "C.UTF-8"
    self.environment = environment
    let quoted = ([Products.path("share-extension")] + arguments).map(Self.shellQuoted)
    let settings = fixture.environment.map { "\($0.key)=\(Self.shellQuoted($0.value))" }
    let script =
      "env -u DBUS_SESSION_BUS_ADDRESS \(settings.joined(separator: " ")) "
      + "\(quoted.joined(separator: " ")); echo \"EXIT=$?\"; "
      + "echo \"STTY=$(stty -a | tr ' ;' '\\n\\n' | grep -E -x -e '-?icanon' -e '-?echo' "
      + "| tr '\\n' ' ')\"; "
      + "sleep 120"
    let started = try await tmux(["new-session", "-d", "-x", "80", "-y", "24", script])
    guard started.status == 0 else { throw FixtureError("tmux new-session failed: \(started)") }
  }

  static func shellQuoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
  }

  @discardableResult
  func tmux(_ arguments: [String]) async throws -> Products.Result {
    let environment = self.environment
    let socket = self.socket
    return try await offThePool {
      try Products.runCommand(
        "tmux", ["-L", socket, "-f", "/dev/null"] + arguments, environment: environment,
        timeout: 20)
    }
  }

  /// The pane's text, as `capture-pane -p` shows it.
  func capture() async throws -> String { try await tmux(["capture-pane", "-p"]).output }

  /// Presses keys by tmux name (`Enter`, `Tab`, `BSpace`, `Left`, `Escape`).
  func send(_ keys: [String]) async throws { try await tmux(["send-keys"] + keys) }

  /// Types text literally.
  func type(_ text: String) async throws { try await tmux(["send-keys", "-l", text]) }

  /// Waits until the pane shows `text`, and returns the pane's last text.
  func waitFor(_ text: String) async throws -> String {
    var screen = ""
    try await waitUntil(timeout: .seconds(30), every: .milliseconds(100)) {
      screen = try await self.capture()
      return screen.contains(text)
    }
    return screen
  }

  /// Sends a signal to the extension: the child of the pane's shell.
  func signalTheExtension(_ signal: CInt) async throws {
    let shell = try await tmux(["list-panes", "-F", "#{pane_pid}"]).output
      .trimmingCharacters(in: .whitespacesAndNewlines)
    let child = try await Products.runCommandAsync("pgrep", ["-P", shell]).output
      .split(separator: "\n").first.flatMap { pid_t($0) }
    guard let child else { throw FixtureError("no extension process under the pane") }
    kill(child, signal)
  }

  /// Stops this session's tmux server (blocking briefly: it is called from `defer`).
  func close() {
    _ = try? Products.runCommand(
      "tmux", ["-L", socket, "-f", "/dev/null", "kill-server"], environment: environment)
  }
}
