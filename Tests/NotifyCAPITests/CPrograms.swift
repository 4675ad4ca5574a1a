import Synchronization
import SystemSupport
import TestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// The C test programs of `Programs/` and the example of `Examples/CNotify`, built once per
/// test run the way a user builds against the library: `Scripts/install-libnotifybus`
/// installs the built `libnotifybus.so` into a temporary prefix, and every program is
/// compiled with the toolchain's clang (`pkg-config notifybus-dispatch`), or with plain gcc
/// (`pkg-config notifybus`) for those that use no blocks.
enum CPrograms {
  static let programs = [
    "check_and_dispatch", "dispatch_fanout", "suspend_resume", "fd_reuse", "signal_delivery",
    "bad_input", "state", "parallel", "exec_again", "fork_child", "monitor_file", "dead_bus",
    "options_peek", "bus_restart",
  ]
  /// The programs that must build with gcc: they use no blocks.
  static let gccPrograms = ["fd_reuse", "signal_delivery", "bad_input", "dead_bus"]

  static let testDirectory = String(#filePath.dropLast("/CPrograms.swift".count))
  static let packageDirectory = String(testDirectory.dropLast("/Tests/NotifyCAPITests".count))

  /// Where the programs were built, or why they could not be.
  struct Build: Sendable {
    let directory: String
    let prefix: String
  }

  static let build: Result<Build, BuildFailure> = make()

  /// The temporary directory of the builds, for the exit handler that removes it.
  static let createdDirectory = Mutex<String?>(nil)

  struct BuildFailure: Error, CustomStringConvertible {
    let description: String
  }

  /// Whether a C toolchain is there to test with.
  static var isAvailable: Bool { clang != nil }

  /// Links `libnotifybus-c.so` when it is missing or older than the NotifyCAPI module:
  /// `swift build --build-tests` compiles the module but does not link dynamic library
  /// products (Scripts/test links it before testing; this covers a bare `swift test`).
  static func linkLibraryIfStale() throws {
    var libraryStatus = stat()
    let haveLibrary = stat(Products.path("libnotifybus-c.so"), &libraryStatus) == 0
    // The modules linked into it, newest first to matter.
    let newestModule = ["NotifyCAPI", "Notify", "NotifyCore", "DBus", "DBusCore", "SystemSupport"]
      .compactMap { module -> Int? in
        var status = stat()
        let path = Products.directory + "/Modules/\(module).swiftmodule"
        return stat(path, &status) == 0 ? status.st_mtim.tv_sec : nil
      }.max()
    if haveLibrary && libraryStatus.st_mtim.tv_sec >= newestModule ?? 0 { return }
    let configuration = Products.directory.hasSuffix("/release") ? "release" : "debug"
    let result = try Products.runCommand(
      "swift",
      [
        "build", "--package-path", packageDirectory, "-c", configuration, "--product",
        "notifybus-c",
        "-Xswiftc", "-warnings-as-errors",
      ], timeout: 900)
    guard result.status == 0 else {
      throw BuildFailure(description: "swift build --product notifybus-c failed: \(result)")
    }
  }

  /// The toolchain's clang: beside `swiftc` on `PATH`.
  static let clang: String? = {
    let path = Products.currentEnvironment()["PATH"] ?? "/usr/bin"
    for directory in path.split(separator: ":") {
      let candidate = "\(directory)/swiftc"
      if access(candidate, X_OK) == 0 {
        var resolved = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard realpath(candidate, &resolved) != nil else { continue }
        let text = String(
          decoding: resolved.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let bin = text.split(separator: "/").dropLast().joined(separator: "/")
        let clang = "/" + bin + "/clang"
        if access(clang, X_OK) == 0 { return clang }
      }
    }
    return nil
  }()

  /// The path of a built program; `gcc` for the plain-gcc build of it.
  static func path(_ name: String, gcc: Bool = false) throws -> String {
    let build = try build.get()
    return build.directory + "/" + (gcc ? "gcc-" : "") + name
  }

  private static func make() -> Result<Build, BuildFailure> {
    var template = Array("/tmp/notifybus-capi-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else {
      return .failure(BuildFailure(description: "mkdtemp failed"))
    }
    let directory = String(
      decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    _ = made
    // Removed when the test process exits: the builds serve every test of the run.
    createdDirectory.withLock { $0 = directory }
    atexit {
      if let directory = CPrograms.createdDirectory.withLock({ $0 }) {
        Subprocess.removeTree(directory)
      }
    }
    let prefix = directory + "/prefix"
    do {
      try linkLibraryIfStale()
      let install = try Products.runCommand(
        packageDirectory + "/Scripts/install-libnotifybus",
        ["--build-dir", Products.directory, "--prefix", prefix], timeout: 60)
      guard install.status == 0 else {
        return .failure(BuildFailure(description: "install-libnotifybus failed: \(install)"))
      }
      let environment = ["PKG_CONFIG_PATH": prefix + "/lib/pkgconfig"]
      func flags(_ module: String) throws -> [String] {
        let result = try Products.runCommand(
          "pkg-config", ["--cflags", "--libs", module], environment: environment)
        guard result.status == 0 else {
          throw BuildFailure(description: "pkg-config \(module) failed: \(result)")
        }
        return result.output.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
      }
      // The installed notifybus.pc carries no rpath, as a system library's does not.
      let runPath = "-Wl,-rpath," + prefix + "/lib"
      let dispatchFlags = try flags("notifybus-dispatch") + [runPath]
      let plainFlags = try flags("notifybus") + [runPath]
      let warnings = ["-Wall", "-Wextra", "-Werror", "-O1"]
      guard let clang else { return .failure(BuildFailure(description: "no clang beside swiftc")) }
      var jobs: [(String, Subprocess)] = []
      var failures: [String] = []
      func finish(_ job: (String, Subprocess)) {
        let (text, errors) = job.1.readToEnd(milliseconds: 180_000)
        if job.1.wait() != .exited(0) { failures.append("\(job.0): \(text)\(errors)") }
      }
      func compile(_ compiler: String, _ source: String, _ output: String, _ flags: [String])
        throws
      {
        // Two compilers at a time: the machine has two cores, shared with other suites.
        if jobs.count >= 2 { finish(jobs.removeFirst()) }
        let process = try Subprocess.spawn(
          compiler, arguments: warnings + ["-o", output, source] + flags, captureOutput: true,
          captureError: true)
        jobs.append((output, process))
      }
      for name in programs {
        try compile(
          clang, "\(testDirectory)/Programs/\(name).c", "\(directory)/\(name)", dispatchFlags)
      }
      for name in gccPrograms {
        try compile(
          "gcc", "\(testDirectory)/Programs/\(name).c", "\(directory)/gcc-\(name)", plainFlags)
      }
      try compile(
        clang, "\(packageDirectory)/Examples/CNotify/notify-example.c",
        "\(directory)/notify-example", dispatchFlags)
      for job in jobs { finish(job) }
      guard failures.isEmpty else {
        return .failure(BuildFailure(description: failures.joined(separator: "\n")))
      }
      return .success(Build(directory: directory, prefix: prefix))
    } catch let failure as BuildFailure {
      return .failure(failure)
    } catch {
      return .failure(BuildFailure(description: "\(error)"))
    }
  }
}
