import DBus
import Dispatch
import Notify
import SystemSupport
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The Swift side of Darwin's notify SPI: plain registrations, peek, watched files and the
/// status report (`NotifyCenter+Private.swift`).
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct NotifyPrivateInterfaceTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  @Test func peekCountsPostsFromOne() async throws {
    let center = try await NotifyCenter.connect(to: .address(bus.address))
    let token = try await center.registerPlain("group.example.peek")
    #expect(try center.peek(token) == 1)
    #expect(try center.check(token))
    try center.post("group.example.peek")
    try center.post("group.example.peek")
    try await center.synchronize()
    let deadline = ContinuousClock.now + .seconds(5)
    while try center.peek(token) < 3 && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(2))
    }
    #expect(try center.peek(token) == 3)
    #expect(try center.check(token))
    try center.cancel(token)
    #expect(throws: NotifyError.self) { try center.peek(token) }
  }

  @Test func aWatchedFileDeliversOncePerChangeToItsTokenOnly() async throws {
    let center = try await NotifyCenter.connect(to: .address(bus.address))
    let directory = bus.directory + "/files"
    mkdir(directory, 0o700)
    let counter = Counter()
    let watched = try await center.register("group.example.file", queue: .global()) { _ in
      counter.increment()
    }
    let other = try await center.registerCheck("group.example.file")
    #expect(try center.check(other))
    try center.monitorFile(directory + "/data", for: watched)
    #expect(throws: NotifyError.self) { try center.monitorFile(directory + "/data", for: watched) }
    try await Task.sleep(for: .milliseconds(300))
    #expect(counter.count == 0)

    close(open(directory + "/data", O_RDONLY | O_CREAT, 0o600))
    #expect(await counter.wait(for: 1) == 1)
    try await Task.sleep(for: .milliseconds(400))
    #expect(counter.count == 1, "a create is one delivery")
    let fd = open(directory + "/data", O_WRONLY)
    _ = write(fd, "x", 1)
    close(fd)
    #expect(await counter.wait(for: 2) == 2)
    try await Task.sleep(for: .milliseconds(400))
    #expect(counter.count == 2, "a write is one delivery")
    unlink(directory + "/data")
    #expect(await counter.wait(for: 3) == 3)
    try await Task.sleep(for: .milliseconds(400))
    #expect(counter.count == 3, "an unlink is one delivery")
    #expect(try !center.check(other), "only the monitoring token is told")

    let local = try await center.registerCheck("self.example.file")
    #expect(throws: NotifyError.self) { try center.monitorFile(directory + "/x", for: local) }
    #expect(throws: NotifyError.self) { try center.monitorFile("/no/such/dir/x", for: other) }
  }

  @Test func theStatusReportListsRegistrations() async throws {
    let center = try await NotifyCenter.connect(to: .address(bus.address))
    let token = try await center.registerCheck("group.example.report")
    let report = await center.statusReport()
    #expect(report.contains("token \(token) check group.example.report posts 0 suspended 0"))
    #expect(report.contains("notifyd: no notifyd answers"), "\(report)")
  }

  @Test func withoutNotifydTheServerVersionIsNotFound() async throws {
    let center = try await NotifyCenter.connect(to: .address(bus.address))
    await #expect(throws: NotifyError.self) { _ = try await center.serverVersion() }
    do {
      _ = try await center.serverVersion()
    } catch {
      #expect(error.status == .serverNotFound)
    }
  }
}
