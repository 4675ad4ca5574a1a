import SystemSupport
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The systemd user unit and the sysusers.d file in Protocol/dbus, checked by systemd's own
/// tools (from the systemd package, which Scripts/bootstrap installs).
@Suite(
  .enabled(
    if: access("/usr/bin/systemd-analyze", X_OK) == 0,
    "systemd-analyze is not installed (apt-get install systemd)"))
struct SystemdUnitTests {
  static let root = String(#filePath.split(separator: "/").dropLast(3).map { "/" + $0 }.joined())

  /// The unit as installed, with ExecStart= naming the built notifyd, and the manual page
  /// its Documentation= names.
  func installedUnit(in directory: String) async throws -> (
    unit: String, environment: [String: String]
  ) {
    let text = try #require(readFile(Self.root + "/Protocol/dbus/notifyd.service"))
    #expect(text.contains("ExecStart=/usr/bin/notifyd "))
    let unit = directory + "/notifyd.service"
    writeFile(unit, text.replacing("/usr/bin/notifyd", with: Products.path("notifyd")))
    _ = try await Products.runCommandAsync(
      "mkdir", ["-p", directory + "/man/man8", directory + "/run"])
    _ = try await Products.runCommandAsync(
      "sh",
      [
        "-c", "gzip -9nc \"$1\" > \"$2\"", "sh", Self.root + "/man/notifyd.8",
        directory + "/man/man8/notifyd.8.gz",
      ])
    chmod(directory + "/run", 0o700)
    return (unit, ["MANPATH": directory + "/man", "XDG_RUNTIME_DIR": directory + "/run"])
  }

  @Test func theUserUnitVerifies() async throws {
    let directory = try temporaryDirectory()
    defer { Subprocess.removeTree(directory) }
    let (unit, environment) = try await installedUnit(in: directory)
    let verify = try await Products.runCommandAsync(
      "systemd-analyze", ["verify", "--user", unit], environment: environment)
    #expect(verify.status == 0 && verify.output.isEmpty && verify.error.isEmpty, "\(verify)")
  }

  @Test func theUserUnitRatesSafe() async throws {
    let directory = try temporaryDirectory()
    defer { Subprocess.removeTree(directory) }
    let (unit, environment) = try await installedUnit(in: directory)
    let security = try await Products.runCommandAsync(
      "systemd-analyze", ["security", "--user", "--offline=true", "--no-pager", unit],
      environment: environment)
    let score = try #require(Self.exposure(in: security.output), "\(security)")
    #expect(score <= 2.0, "\(security.output)")
    #expect(try #require(readFile(unit)).contains("\nStateDirectory=notifybus\n"))
  }

  @Test func sysusersCreatesTheUserThePolicyNames() async throws {
    let directory = try temporaryDirectory()
    defer { Subprocess.removeTree(directory) }
    mkdir(directory + "/etc", 0o755)
    let result = try await Products.runCommandAsync(
      "systemd-sysusers",
      ["--root=" + directory, Self.root + "/Protocol/dbus/notifybus.sysusers.conf"])
    #expect(result.status == 0, "\(result)")
    let passwd = try #require(readFile(directory + "/etc/passwd"))
    #expect(passwd.contains("\nnotifybus:") || passwd.hasPrefix("notifybus:"), "\(passwd)")
    let policy = try #require(readFile(Self.root + "/Protocol/dbus/org.notifybus.Notify1.conf"))
    #expect(policy.contains("<policy user=\"notifybus\">"))
  }

  /// The number in `→ Overall exposure level for notifyd.service: 0.6 SAFE`.
  static func exposure(in output: String) -> Double? {
    guard
      let line = output.split(separator: "\n").last(where: { $0.contains("Overall exposure level") }
      ),
      let colon = line.lastIndex(of: ":")
    else { return nil }
    return Double(line[line.index(after: colon)...].split(separator: " ").first ?? "")
  }
}

/// A new directory under /tmp.
func temporaryDirectory() throws -> String {
  var template = Array("/tmp/notifybus-test-XXXXXX".utf8CString)
  guard let made = mkdtemp(&template) else { throw Errno.current }
  return String(cString: made)
}
