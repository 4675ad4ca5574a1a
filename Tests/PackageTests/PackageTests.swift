import BusTestSupport
import DBus
import SystemSupport
import TestTraits
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The Debian package Scripts/package builds (Scripts/test builds it before the tests),
/// extracted with `dpkg-deb -x` and run from there against a private bus.
@Suite(
  .blocking,
  .enabled(if: Package.debian != nil, "no package: run Scripts/package (Scripts/test does)"),
  .enabled(if: PrivateBus.isAvailable), .serialized, .timeLimit(.minutes(5)))
struct PackageTests {
  let root: String
  let deb: String

  init() async throws {
    deb = try #require(Package.debian)
    root = try Package.temporaryDirectory()
    let extract = try await Products.runCommandAsync("dpkg-deb", ["-x", deb, root])
    try #require(extract.status == 0, "\(extract)")
  }

  var bin: String { root + "/usr/bin" }

  func field(_ name: String) async throws -> String {
    try await Products.runCommandAsync("dpkg-deb", ["-f", deb, name]).output.trimmingNewline()
  }

  @Test func itHoldsTheInstalledLayout() async throws {
    defer { Subprocess.removeTree(root) }
    let version = try await Products.runCommandAsync(bin + "/notifyd", ["--version"]).output
      .trimmingNewline()
    #expect(try await field("Version") == version)
    #expect(deb.hasSuffix("/notifybus_\(version)_\(try await field("Architecture")).deb"))
    var expected = [
      "usr/share/dbus-1/services/org.notifybus.Notify1.service",
      "usr/share/dbus-1/system.d/org.notifybus.Notify1.conf",
      "usr/lib/systemd/user/notifyd.service",
      "usr/lib/sysusers.d/notifybus.conf",
      "usr/share/doc/notifybus/copyright",
      "usr/share/doc/notifybus/changelog.gz",
      "usr/share/man/man8/notifyd.8.gz",
    ]
    for tool in Package.tools {
      expected.append("usr/bin/\(tool)")
      if tool != "notifyd" { expected.append("usr/share/man/man1/\(tool).1.gz") }
      expected += [
        "usr/share/bash-completion/completions/\(tool)",
        "usr/share/zsh/vendor-completions/_\(tool)",
        "usr/share/fish/vendor_completions.d/\(tool).fish",
      ]
    }
    for path in expected { #expect(access(root + "/" + path, F_OK) == 0, "missing /\(path)") }
    let service = try #require(
      readFile(root + "/usr/share/dbus-1/services/org.notifybus.Notify1.service"))
    #expect(service.contains("\nExec=/usr/bin/notifyd\n"))
    #expect(service.contains("\nSystemdService=notifyd.service\n"))
    let unit = try #require(readFile(root + "/usr/lib/systemd/user/notifyd.service"))
    #expect(unit.contains("\nExecStart=/usr/bin/notifyd "))
  }

  @Test func theExecutablesNeedOnlySystemLibrariesAndDependsNamesTheirPackages() async throws {
    defer { Subprocess.removeTree(root) }
    let toolchain = try await Package.toolchainDirectory()
    var packages: Set<String> = []
    for tool in Package.tools {
      let path = bin + "/" + tool
      let dynamic = try await Products.runCommandAsync("readelf", ["-d", path]).output
      #expect(!dynamic.contains("RUNPATH") && !dynamic.contains("RPATH"), "\(tool): \(dynamic)")
      let ldd = try await Products.runCommandAsync("ldd", [path])
      if ldd.output.contains("not a dynamic executable") || ldd.error.contains("not a dynamic") {
        continue
      }
      // The libraries it names itself (ldd also lists theirs), as ldd resolves them.
      let needed = dynamic.split(separator: "\n").compactMap { line -> Substring? in
        guard line.contains("(NEEDED)"), let open = line.lastIndex(of: "["),
          let close = line.lastIndex(of: "]")
        else { return nil }
        return line[line.index(after: open)..<close]
      }
      for line in ldd.output.split(separator: "\n") {
        #expect(!line.contains("not found"), "\(tool): \(line)")
        #expect(!line.contains(toolchain) && !line.contains("swift"), "\(tool): \(line)")
        // `libdbus-1.so.3 => /lib/x86_64-linux-gnu/libdbus-1.so.3 (0x...)`
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard let name = words.first, needed.contains(name) || line.contains("ld-linux"),
          let arrow = words.firstIndex(of: "=>"), arrow + 1 < words.count
        else { continue }
        let library = String(words[arrow + 1])
        var owner = try await Products.runCommandAsync("dpkg", ["-S", library])
        if owner.status != 0 {
          let resolved = try await Products.runCommandAsync("readlink", ["-f", library]).output
          owner = try await Products.runCommandAsync("dpkg", ["-S", resolved.trimmingNewline()])
        }
        #expect(owner.status == 0, "\(tool): no package owns \(library)")
        if let package = owner.output.split(separator: ":").first {
          packages.insert(String(package))
        }
      }
    }
    let field = try await field("Depends")
    let depends = Set(
      field.split(separator: ",").map { String($0.split(separator: " ").first ?? "") })
    #expect(depends == packages, "Depends: \(field)")
    #expect(depends.contains("libdbus-1-3") && depends.contains("libc6"))
  }

  @Test func theExtractedToolsWorkThroughThePackagedActivationFile() async throws {
    defer { Subprocess.removeTree(root) }
    let bus = try PrivateBus()
    // The packaged service file, with /usr/bin/notifyd pointing into the extracted tree.
    let packaged = try #require(
      readFile(root + "/usr/share/dbus-1/services/org.notifybus.Notify1.service"))
    writeFile(
      bus.serviceDirectory + "/org.notifybus.Notify1.service",
      packaged.replacing("Exec=/usr/bin/notifyd", with: "Exec=\(bin)/notifyd --no-persist"),
      mode: 0o644)
    let environment = [
      "NOTIFYBUS_BUS_ADDRESS": bus.address.rawValue, "DBUS_SESSION_BUS_ADDRESS": "",
      "PATH": bin + ":/usr/bin:/bin", "HOME": bus.directory,
    ]
    func run(_ script: String) async throws -> Products.Result {
      try await Products.runCommandAsync(
        "sh", ["-c", "cd '\(bus.directory)' || exit 99\n" + script], environment: environment,
        timeout: 60)
    }
    let state = try await run("notifyutil -s foo 5 && notifyutil -g foo")
    #expect(state.output == "foo 5\n", "\(state)")
    let watch = try await run(
      """
      notify-watch --count 1 --timeout 20 group.example.saved > watch.log &
      watcher=$!
      sleep 0.5
      notify-post group.example.saved
      wait $watcher; status=$?
      cat watch.log; exit $status
      """)
    #expect(watch.status == 0 && watch.output == "group.example.saved\n", "\(watch)")
    let stock = try await run(
      """
      eval "$(notifybus env)" || exit 98
      dbus-monitor --session "type='signal',member='Posted'" > monitor.log 2>&1 &
      monitor=$!
      sleep 0.5
      dbus-send --session --print-reply=literal --dest=org.notifybus.Notify1 \
        /org/notifybus/Notify1 org.notifybus.Notify1.GetState string:foo
      dbus-send --session --type=signal /org/notifybus/Notify1 \
        "$(notifybus interface by.hand).Posted" string:by.hand
      sleep 0.5; kill $monitor
      grep -c 'interface=org.notifybus.Notify1.N.by.hand; member=Posted' monitor.log
      """)
    #expect(stock.output == "   uint64 5\n1\n", "\(stock)")
    let status = try await run("notifybus status")
    #expect(status.output.contains("\nnotifyd: running, pid "), "\(status)")
  }

  @Test func theUserUnitVerifiesAndRatesSafe() async throws {
    defer { Subprocess.removeTree(root) }
    try #require(
      access("/usr/bin/systemd-analyze", X_OK) == 0,
      "systemd-analyze is not installed (apt-get install systemd)")
    // ExecStart= names /usr/bin/notifyd, which this machine may lack: point it into the tree.
    let unit = root + "/notifyd.service"
    let text = try #require(readFile(root + "/usr/lib/systemd/user/notifyd.service"))
    writeFile(unit, text.replacing("/usr/bin/notifyd", with: bin + "/notifyd"), mode: 0o644)
    mkdir(root + "/run", 0o700)
    let environment = ["MANPATH": root + "/usr/share/man", "XDG_RUNTIME_DIR": root + "/run"]
    let verify = try await Products.runCommandAsync(
      "systemd-analyze", ["verify", "--user", unit], environment: environment)
    #expect(verify.status == 0 && verify.error.isEmpty, "\(verify)")
    let security = try await Products.runCommandAsync(
      "systemd-analyze", ["security", "--user", "--offline=true", "--no-pager", unit],
      environment: environment)
    let line = security.output.split(separator: "\n").last { $0.contains("Overall exposure") }
    let score = line.flatMap {
      Double($0.split(separator: ":").last?.split(separator: " ").first ?? "")
    }
    #expect(score.map { $0 <= 2.0 } == true, "\(security.output)")
  }

  @Test func readlaterIsADBusActivatableApplication() async throws {
    defer { Subprocess.removeTree(root) }
    #expect(access(bin + "/readlater", X_OK) == 0)
    let entryPath = root + "/usr/share/applications/org.notifybus.ReadLater.desktop"
    let entry = try #require(readFile(entryPath))
    #expect(entry.contains("\nExec=/usr/bin/readlater open %U\n"), "\(entry)")
    #expect(entry.contains("\nDBusActivatable=true\n"))
    #expect(entry.contains("\nMimeType=x-scheme-handler/readlater;\n"))
    let validate = try await Products.runCommandAsync("desktop-file-validate", [entryPath])
    #expect(validate.status == 0, "\(validate)")
    let service = try #require(
      readFile(root + "/usr/share/dbus-1/services/org.notifybus.ReadLater.service"))
    #expect(service.contains("\nName=org.notifybus.ReadLater\nExec=/usr/bin/readlater open\n"))
  }

  /// Issue 15 item 2: the desktop entries, generated from the installed Info.plists, pass
  /// desktop-file-validate and run the installed extension, which reads those Info.plists.
  @Test func theShareExtensionsDesktopEntriesValidateAndRunIt() async throws {
    defer { Subprocess.removeTree(root) }
    for plist in ["Info", "Info-Images"] {
      #expect(access(root + "/usr/share/notifybus/share-extension/\(plist).plist", R_OK) == 0)
    }
    for (name, rule) in Package.desktopEntries {
      let path = root + "/usr/share/applications/" + name
      let entry = try #require(readFile(path), "missing /usr/share/applications/\(name)")
      #expect(entry.contains("\nExec=/usr/bin/share-extension --rule \(rule) %U\n"), "\(entry)")
      #expect(entry.contains("\nTerminal=true\n") && entry.contains("\nMimeType=text/plain;"))
      if access("/usr/bin/desktop-file-validate", X_OK) == 0 {
        let validation = try await Products.runCommandAsync("desktop-file-validate", [path])
        #expect(validation.status == 0, "\(validation)")
        #expect(validation.output.isEmpty && validation.error.isEmpty, "\(validation)")
      }
      // The installed executable regenerates the same entry from the installed Info.plist.
      let again = try await Products.runCommandAsync(
        bin + "/share-extension",
        ["--desktop-entry", "--rule", rule, "--exec", "/usr/bin/share-extension"])
      #expect(again.status == 0 && again.output == entry, "\(again)")
    }
  }

  @Test func lintianFindsNoErrors() async throws {
    defer { Subprocess.removeTree(root) }
    try #require(access("/usr/bin/lintian", X_OK) == 0, "lintian is not installed")
    let lintian = try await Products.runCommandAsync(
      "lintian", ["--fail-on", "error", "--no-tag-display-limit", deb], timeout: 240)
    #expect(lintian.status == 0, "\(lintian)")
    #expect(!lintian.output.contains("\nE: ") && !lintian.output.hasPrefix("E: "), "\(lintian)")
  }
}

/// Scripts/install, from the release build Scripts/package made.
@Suite(
  .blocking,
  .enabled(if: Package.debian != nil, "no release build: run Scripts/package (Scripts/test does)"),
  .serialized, .timeLimit(.minutes(5)))
struct InstallScriptTests {
  static let script =
    String(#filePath.split(separator: "/").dropLast(3).map { "/" + $0 }.joined())
    + "/Scripts/install"

  func install(_ prefix: String) async throws -> Products.Result {
    try await Products.runCommandAsync(
      Self.script, ["--skip-build", "--prefix", prefix], timeout: 240)
  }

  @Test func anUnwritablePrefixFailsClearlyAndCreatesNothing() async throws {
    let result = try await install("/proc/notifybus-install-test/prefix")
    #expect(result.status == 1, "\(result)")
    #expect(
      result.error.hasPrefix(
        "install: cannot install into /proc/notifybus-install-test/prefix: /proc is not writable"),
      "\(result)")
    #expect(access("/proc/notifybus-install-test", F_OK) != 0)
  }

  @Test func aFileThatCannotGoInPlaceLeavesNothingHalfInstalled() async throws {
    let directory = try Package.temporaryDirectory()
    defer { Subprocess.removeTree(directory) }
    let prefix = directory + "/prefix"
    _ = try await Products.runCommandAsync("mkdir", ["-p", prefix + "/bin/notifyd"])
    let result = try await install(prefix)
    #expect(result.status == 1, "\(result)")
    #expect(result.error.contains("a directory is in the way"), "\(result)")
    #expect(result.error.contains("nothing was installed into \(prefix)"), "\(result)")
    let left = try await Products.runCommandAsync("find", [prefix]).output.split(separator: "\n")
    #expect(
      left == [Substring(prefix), Substring(prefix + "/bin"), Substring(prefix + "/bin/notifyd")],
      "\(left)")
  }

  @Test func theInstalledToolsWorkWithNoSetupStep() async throws {
    let directory = try Package.temporaryDirectory()
    defer {
      if let text = readFile(directory + "/run/notifybus/bus.pid"),
        let pid = pid_t(text.trimmingNewline())
      {
        kill(pid, SIGTERM)
      }
      Subprocess.removeTree(directory)
    }
    let prefix = directory + "/prefix"
    let first = try await install(prefix)
    #expect(first.status == 0, "\(first)")
    #expect(first.output.hasPrefix("installed NotifyBus "), "\(first)")
    let again = try await install(prefix)
    #expect(again.status == 0, "installing over an installation: \(again)")
    let service = try #require(
      readFile(prefix + "/share/dbus-1/services/org.notifybus.Notify1.service"))
    #expect(service.contains("\nExec=\(prefix)/bin/notifyd\n"), "\(service)")
    let unit = try #require(readFile(prefix + "/share/systemd/user/notifyd.service"))
    #expect(unit.contains("\nExecStart=\(prefix)/bin/notifyd "))
    // readlater's desktop entry names the prefix's readlater, and GIO's cache knows it.
    let entry = try #require(
      readFile(prefix + "/share/applications/org.notifybus.ReadLater.desktop"))
    #expect(entry.contains("\nExec=\(prefix)/bin/readlater open %U\n"), "\(entry)")
    #expect(
      readFile(prefix + "/share/applications/mimeinfo.cache")?.contains(
        "x-scheme-handler/readlater=org.notifybus.ReadLater.desktop;") == true)
    for name in ["run", "home", "data", "state"] { mkdir(directory + "/" + name, 0o700) }
    // The prefix's share directory is where the session bus looks (XDG_DATA_DIRS), so the
    // installed service file starts the installed notifyd.
    let environment = [
      "XDG_RUNTIME_DIR": directory + "/run", "HOME": directory + "/home",
      "XDG_DATA_HOME": directory + "/data", "XDG_DATA_DIRS": prefix + "/share",
      "XDG_STATE_HOME": directory + "/state", "DBUS_SESSION_BUS_ADDRESS": "",
      "NOTIFYBUS_BUS_ADDRESS": "", "INVOCATION_ID": "", "JOURNAL_STREAM": "",
    ]
    let state = try await Products.runCommandAsync(
      "sh",
      ["-c", "\"$1/notifyutil\" -s foo 5 && \"$1/notifyutil\" -g foo", "sh", prefix + "/bin"],
      environment: environment)
    #expect(state.output == "foo 5\n", "\(state)")
    #expect(
      readFile(directory + "/data/notifybus/dbus-1/services/org.notifybus.Notify1.service") == nil,
      "the installed service file serves; none is generated")
    // The C library came with it: a gcc program builds with the installed notifybus.pc
    // alone (whose rpath finds the library outside the loader's path) and runs.
    let program = directory + "/signal_delivery"
    let flags = try await Products.runCommandAsync(
      "pkg-config", ["--cflags", "--libs", "notifybus"],
      environment: ["PKG_CONFIG_PATH": prefix + "/lib/pkgconfig", "PKG_CONFIG_LIBDIR": ""])
    #expect(flags.output.contains("-Wl,-rpath,\(prefix)/lib"), "\(flags)")
    let gcc = try await Products.runCommandAsync(
      "gcc",
      ["-o", program, Repository.root + "/Tests/NotifyCAPITests/Programs/signal_delivery.c"]
        + flags.output.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))
    #expect(gcc.status == 0, "\(gcc)")
    let signals = try await Products.runCommandAsync(
      program, [], environment: environment, timeout: 60)
    #expect(signals.status == 0, "\(signals)")
    _ = try await Products.runCommandAsync(
      prefix + "/bin/notifybus", ["stop"], environment: environment)
  }
}

/// Finding the package and the toolchain.
enum Package {
  static let tools = [
    "notify-post", "notify-watch", "notifyutil", "notifyd", "notifybus", "share-extension",
    "readlater",  // the read-later example app, D-Bus activatable (Protocol/handoff.md §7)
  ]

  /// The share extension's desktop entries, by file name, and the `--rule` each runs.
  static let desktopEntries = [
    ("org.notifybus.example.readlater.share.desktop", "seed"),
    ("org.notifybus.example.readlater.share-images.desktop", "images"),
  ]

  /// `$NOTIFYBUS_PACKAGE`, else the newest `.build/package/notifybus_*.deb`.
  static var debian: String? {
    if let explicit = Environment.value("NOTIFYBUS_PACKAGE") { return explicit }
    let root = String(#filePath.split(separator: "/").dropLast(3).map { "/" + $0 }.joined())
    guard
      let listing = try? Products.runCommand(
        "sh", ["-c", "ls -t '\(root)'/.build/package/notifybus_*.deb 2>/dev/null"])
    else { return nil }
    return listing.output.split(separator: "\n").first.map(String.init)
  }

  /// The directory of the toolchain's libraries, which nothing packaged may point into.
  static func toolchainDirectory() async throws -> String {
    let swiftc = try await Products.runCommandAsync(
      "sh", ["-c", "readlink -f \"$(command -v swiftc)\""])
    let path = swiftc.output.trimmingNewline()
    return String(path.split(separator: "/").dropLast(2).map { "/" + $0 }.joined())
  }

  static func temporaryDirectory() throws -> String {
    var template = Array("/tmp/notifybus-package-test-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw Errno.current }
    chmod(String(cString: made), 0o755)
    return String(cString: made)
  }
}

extension String {
  func trimmingNewline() -> String {
    var text = self
    while text.hasSuffix("\n") { text.removeLast() }
    return text
  }
}
