import BusTestSupport
import DBus
import SystemSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The C library's packages, libnotifybus1 and libnotifybus-dev, which Scripts/package
/// builds beside notifybus: extracted together into a temporary root, a C program builds
/// there with pkg-config alone (plain gcc, and clang with dispatch handlers) and runs
/// against a private bus, with nothing loaded from the Swift toolchain.
@Suite(
  .enabled(if: LibraryPackages.debs != nil, "no libnotifybus1 package: run Scripts/package"),
  .enabled(if: PrivateBus.isAvailable), .serialized, .timeLimit(.minutes(5)))
struct LibraryPackageTests {
  let root: String
  let debs: LibraryPackages.Debs
  let libdir: String

  init() async throws {
    debs = try #require(LibraryPackages.debs)
    root = try Package.temporaryDirectory()
    for deb in [debs.runtime, debs.development] {
      let extract = try await Products.runCommandAsync("dpkg-deb", ["-x", deb, root])
      try #require(extract.status == 0, "\(extract)")
    }
    let multiarch = try await Products.runCommandAsync("gcc", ["-print-multiarch"]).output
    libdir = "/usr/lib/" + multiarch.trimmingNewline()
  }

  /// What a C program needs on a machine where the packages are installed in `root`:
  /// pkg-config reading only the packaged .pc files, prefixed with the root, and the
  /// loader looking in the packaged directories (as it does in /usr/lib/<triplet>).
  var environment: [String: String] {
    [
      "PKG_CONFIG_SYSROOT_DIR": root, "PKG_CONFIG_LIBDIR": root + libdir + "/pkgconfig",
      "PKG_CONFIG_PATH": "", "LD_LIBRARY_PATH": root + libdir + ":" + root + libdir + "/notifybus",
      "PATH": "/usr/bin:/bin",
    ]
  }

  func pkgConfig(_ module: String) async throws -> [String] {
    let flags = try await Products.runCommandAsync(
      "pkg-config", ["--cflags", "--libs", module], environment: environment)
    try #require(flags.status == 0, "\(flags)")
    return flags.output.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
  }

  @Test func theLibraryHasItsSonameAndItsPrivateDirectory() async throws {
    defer { Subprocess.removeTree(root) }
    let library = root + libdir + "/libnotifybus.so.1.0.0"
    #expect(
      try await Products.runCommandAsync("readlink", [root + libdir + "/libnotifybus.so.1"]).output
        == "libnotifybus.so.1.0.0\n")
    #expect(
      try await Products.runCommandAsync("readlink", [root + libdir + "/libnotifybus.so"]).output
        == "libnotifybus.so.1\n")
    let dynamic = try await Products.runCommandAsync("readelf", ["-d", library]).output
    #expect(dynamic.contains("Library soname: [libnotifybus.so.1]"), "\(dynamic)")
    #expect(dynamic.contains("Library runpath: [$ORIGIN/notifybus]"), "\(dynamic)")
    let symbols = try await Products.runCommandAsync("readelf", ["--dyn-syms", "-W", library])
    let exported = symbols.output.split(separator: "\n").filter {
      $0.contains(" FUNC ") && $0.contains(" GLOBAL ") && !$0.contains(" UND ")
    }
    #expect(exported.count == 19, "\(exported.joined(separator: "\n"))")
    #expect(exported.allSatisfy { $0.contains("@@NOTIFYBUS_1") }, "\(exported)")
    for header in [
      "notify.h", "notify_keys.h", "notify_private.h", "libdispatch/dispatch/dispatch.h",
      "libdispatch/Block/Block.h",
    ] {
      #expect(access(root + "/usr/include/notifybus/" + header, R_OK) == 0, "no \(header)")
    }
    #expect(access(root + libdir + "/notifybus/libdispatch.so", R_OK) == 0)
    #expect(access(root + "/usr/share/doc/libnotifybus1/copyright", R_OK) == 0)
    let depends = try await Products.runCommandAsync("dpkg-deb", ["-f", debs.runtime, "Depends"])
    #expect(
      depends.output.contains("libc6") && depends.output.contains("libdbus-1-3"), "\(depends)")
    let development = try await Products.runCommandAsync(
      "dpkg-deb", ["-f", debs.development, "Depends", "Version"])
    #expect(development.output.hasPrefix("Depends: libnotifybus1 (= "), "\(development)")
  }

  @Test func cProgramsBuildWithPkgConfigAndRunWithNothingFromTheToolchain() async throws {
    defer { Subprocess.removeTree(root) }
    let toolchain = try await Package.toolchainDirectory()
    let bus = try PrivateBus()
    let repository = Repository.root
    let example = root + "/notify-example"
    // Plain gcc: check and signal registrations (signal_delivery), file descriptors with
    // NOTIFY_REUSE (fd_reuse).
    let plainFlags = try await pkgConfig("notifybus")
    let plain = ["signal_delivery", "fd_reuse"].map { root + "/" + $0 }
    for program in plain {
      let source =
        repository + "/Tests/NotifyCAPITests/Programs/\(program.split(separator: "/").last!).c"
      let gcc = try await Products.runCommandAsync(
        "gcc", ["-Wall", "-Wextra", "-Werror", "-o", program, source] + plainFlags,
        environment: environment)
      #expect(gcc.status == 0, "\(gcc)")
    }
    // clang with blocks and dispatch handlers (Debian's clang where there is no
    // toolchain; here the toolchain's, whose own directories pkg-config does not name).
    let clang = toolchain + "/bin/clang"
    let dispatchFlags = try await pkgConfig("notifybus-dispatch")
    #expect(!dispatchFlags.contains { $0.contains(toolchain) }, "\(dispatchFlags)")
    let source = repository + "/Examples/CNotify/notify-example.c"
    let built = try await Products.runCommandAsync(
      clang, ["-Wall", "-Werror", "-o", example, source] + dispatchFlags,
      environment: environment)
    #expect(built.status == 0, "\(built)")
    // The headers it compiled with are the packaged ones.
    let headers = try await Products.runCommandAsync(
      clang,
      ["-M", source]
        + dispatchFlags.filter {
          !$0.hasPrefix("-l") && !$0.hasPrefix("-L") && !$0.hasPrefix("-Wl")
        },
      environment: environment)
    #expect(
      headers.output.contains(root + "/usr/include/notifybus/libdispatch/dispatch/dispatch.h"),
      "\(headers)")
    #expect(headers.output.contains(root + "/usr/include/notifybus/notify.h"), "\(headers)")
    #expect(!headers.output.contains(toolchain + "/lib/swift/"), "\(headers)")
    for program in plain + [example] {
      let ldd = try await Products.runCommandAsync("ldd", [program], environment: environment)
      #expect(ldd.status == 0, "\(ldd)")
      for line in ldd.output.split(separator: "\n") {
        #expect(!line.contains("not found") && !line.contains(toolchain), "\(program): \(line)")
        if line.contains("libnotifybus") || line.contains("libdispatch")
          || line.contains("libswift")
          || line.contains("libBlocksRuntime")
        {
          #expect(line.contains("=> " + root + libdir), "\(program): \(line)")
        }
      }
      #expect(ldd.output.count { $0 == "\n" } > 0)
    }
    let exampleLdd = try await Products.runCommandAsync("ldd", [example], environment: environment)
    #expect(
      exampleLdd.output.split(separator: "\n").filter { $0.contains("libdispatch.so") }.count == 1,
      "one libdispatch in the process: \(exampleLdd.output)")
    var run = environment
    run["NOTIFYBUS_BUS_ADDRESS"] = bus.address.rawValue
    run["DBUS_SESSION_BUS_ADDRESS"] = ""
    run["HOME"] = bus.directory
    for program in plain {
      let result = try await Products.runCommandAsync(program, [], environment: run, timeout: 60)
      #expect(result.status == 0, "\(program): \(result)")
    }
    let posts = try await Products.runCommandAsync(
      example, ["org.notifybus.test.package", "3"], environment: run, timeout: 60)
    #expect(posts.status == 0, "\(posts)")
    #expect(posts.output.contains("received org.notifybus.test.package"), "\(posts)")
    #expect(posts.output.contains("posted org.notifybus.test.package (3 of 3)"), "\(posts)")
  }

  @Test func lintianFindsNoErrors() async throws {
    defer { Subprocess.removeTree(root) }
    try #require(access("/usr/bin/lintian", X_OK) == 0, "lintian is not installed")
    let lintian = try await Products.runCommandAsync(
      "lintian", ["--fail-on", "error", "--no-tag-display-limit", debs.runtime, debs.development],
      timeout: 240)
    #expect(lintian.status == 0, "\(lintian)")
    #expect(!lintian.output.contains("\nE: ") && !lintian.output.hasPrefix("E: "), "\(lintian)")
  }
}

/// Finding the C library's packages beside the notifybus package.
enum LibraryPackages {
  struct Debs {
    var runtime: String
    var development: String
  }

  /// libnotifybus1 and libnotifybus-dev of the same version and architecture as the
  /// notifybus package the other suites use.
  static var debs: Debs? {
    guard let main = Package.debian else { return nil }
    let directory = String(main[..<(main.lastIndex(of: "/") ?? main.startIndex)])
    let file = String(main[main.index(after: main.lastIndex(of: "/") ?? main.startIndex)...])
    guard file.hasPrefix("notifybus_") else { return nil }
    let rest = file.dropFirst("notifybus_".count)
    let debs = Debs(
      runtime: "\(directory)/libnotifybus1_\(rest)",
      development: "\(directory)/libnotifybus-dev_\(rest)")
    guard access(debs.runtime, R_OK) == 0, access(debs.development, R_OK) == 0 else { return nil }
    return debs
  }
}
