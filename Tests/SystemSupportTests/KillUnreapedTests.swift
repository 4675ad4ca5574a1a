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
  @Test func anInterruptedBenchmarkTakesItsPrivateBusWithIt() throws {
    let bench = Products.path("notifybus-bench")
    try #require(access(bench, X_OK) == 0, "build the benchmark first: \(bench)")
    // The role starts a private bus as every suite does and holds it.
    let process = try Subprocess.spawn(bench, arguments: ["--child", "hold-bus"])
    defer {
      process.kill()
      process.wait()
    }
    let ready = try #require(process.readLine(milliseconds: 30_000), "the role did not start")
    let daemon = try #require(Int32(ready.dropFirst("ready ".count)), "\(ready)")
    let status = try #require(ProcessStatus(daemon), "no process \(daemon)")
    try #require(status.parent == process.pid, "\(daemon) is not the role's child")
    process.kill(SIGINT)
    #expect(process.wait() == .exited(128 + SIGINT))
    // Killed and then reaped by whoever inherited it, or a zombie waiting for that; the
    // start time tells a later process with its number apart.
    func running() -> Bool {
      ProcessStatus(daemon).map { $0.state != "Z" && $0.started == status.started } ?? false
    }
    let deadline = ContinuousClock.now + .seconds(10)
    while running() && ContinuousClock.now < deadline { usleep(5_000) }
    #expect(!running(), "dbus-daemon \(daemon) outlived the benchmark")
  }
}
