import SystemSupport
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// `Subprocess.killUnreaped`, as a program stopped by a signal uses it: `notifybus-bench`
/// interrupted while its private bus runs takes the bus with it.
///
/// The call signals every child of the calling process, so it is tried in a child process
/// of its own (the benchmark), never in the test process, whose other tests have children.
@Suite(.timeLimit(.minutes(2)))
struct KillUnreapedTests {
  /// The processes whose parent is `parent`, with their command names.
  func children(of parent: Int32) -> [(pid: Int32, name: String)] {
    guard let directory = opendir("/proc") else { return [] }
    defer { closedir(directory) }
    var found: [(Int32, String)] = []
    while let entry = readdir(directory) {
      let name = withUnsafeBytes(of: entry.pointee.d_name) {
        String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
      }
      guard let pid = Int32(name), let stat = readStat(pid) else { continue }
      if stat.parent == parent { found.append((pid, stat.name)) }
    }
    return found
  }

  /// The command name, state and parent of `pid` from `/proc/PID/stat`.
  func readStat(_ pid: Int32) -> (name: String, state: Character, parent: Int32)? {
    guard let text = readFile("/proc/\(pid)/stat"),
      let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")")
    else { return nil }
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 1, let state = fields[0].first, let parent = Int32(fields[1]) else {
      return nil
    }
    return (String(text[text.index(after: open)..<close]), state, parent)
  }

  @Test func anInterruptedBenchmarkTakesItsPrivateBusWithIt() async throws {
    let bench = Products.path("notifybus-bench")
    try #require(access(bench, X_OK) == 0, "build the benchmark first: \(bench)")
    let directory = TemporaryDirectory()
    let log = directory.path + "/bench.log"
    // The notifyd suite holds its private bus for the whole run, about 20 s.
    let process = try Subprocess.spawn(
      bench, arguments: ["notifyd"], captureOutput: false, errorFile: log)
    defer {
      process.kill()
      process.wait()
    }
    var daemons: [Int32] = []
    let deadline = ContinuousClock.now + .seconds(60)
    while daemons.isEmpty && ContinuousClock.now < deadline {
      if let ended = process.wait(milliseconds: 0) {
        Issue.record("the benchmark ended (\(ended)) first: \(readFile(log) ?? "")")
        return
      }
      daemons = children(of: process.pid).filter { $0.name == "dbus-daemon" }.map(\.pid)
      try await Task.sleep(for: .milliseconds(20))
    }
    try #require(!daemons.isEmpty, "the benchmark started no dbus-daemon: \(readFile(log) ?? "")")
    process.kill(SIGINT)
    #expect(process.wait() == .exited(128 + SIGINT))
    // Killed and then reaped by whoever inherited it, or a zombie waiting for that.
    let gone = ContinuousClock.now + .seconds(10)
    func running(_ pid: Int32) -> Bool { readStat(pid).map { $0.state != "Z" } ?? false }
    while daemons.contains(where: running) && ContinuousClock.now < gone {
      try await Task.sleep(for: .milliseconds(20))
    }
    #expect(!daemons.contains(where: running), "dbus-daemon \(daemons) outlived the benchmark")
  }
}
