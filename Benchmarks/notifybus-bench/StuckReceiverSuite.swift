import DBus
import Notify
import SystemSupport

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

/// What one receiver that stops reading costs the bus daemon (issue 11, item 13): its
/// resident memory grown by posts to a `SIGSTOP`ped receiver, with the embedded bus's
/// 1 MiB per-connection limit and with the session bus's 1 GB.
enum StuckReceiverSuite: BenchmarkSuite {
  static let name = "stuck"

  static func run(scale: Double) async throws -> [BenchmarkRow] {
    let posts = max(10_000, Int(100_000 * scale))
    let bounded = try await growth(outgoingLimit: BusConfiguration.maximumOutgoingBytes, posts)
    let unbounded = try await growth(outgoingLimit: 1_000_000_000, posts)
    let name = "bus memory, 1 stuck receiver, \(posts) posts"
    return [
      BenchmarkRow(
        name: name, unit: "KiB", subject: bounded, baselineName: "5 MiB budget", baseline: 5120,
        higherIsBetter: false, target: 1),
      BenchmarkRow(
        name: name, unit: "KiB", subject: bounded, baselineName: "session bus's 1 GB limit",
        baseline: unbounded, higherIsBetter: false, target: nil),
    ]
  }

  /// How many KiB the daemon grows by while `posts` posts go to a stopped receiver.
  private static func growth(outgoingLimit: Int, _ posts: Int) async throws -> Double {
    let bus = try BenchBus(outgoingLimit: outgoingLimit)
    let receiver = try Subprocess.spawn(
      CommandLine.arguments[0],
      arguments: ["--child", "notify-hold", bus.address.rawValue, "1", "same"])
    defer {
      receiver.kill(SIGCONT)
      receiver.kill()
      receiver.wait()
    }
    guard receiver.readLine(milliseconds: 60_000)?.hasPrefix("ready") == true else {
      throw DBusError(.failed, "the receiving process did not start")
    }
    receiver.kill(SIGSTOP)
    let center = try await NotifyCenter.connect(to: .address(bus.address))
    defer { Task { await center.close() } }
    let before = Children.residentBytes(of: bus.pid)
    for _ in 0..<posts { try center.post("bench.idle.shared") }
    try await center.synchronize()
    return Double(Children.residentBytes(of: bus.pid) - before) / 1024
  }
}
