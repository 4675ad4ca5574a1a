import BusTestSupport
import DBus
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// Descriptors other than the bus's, polled by the connection's loop
/// (`BusConnection.watchReadable`): their handler runs on the connection's thread, and
/// never after the watch is stopped.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(1)))
struct WatchReadableTests {
  @Test func aReadableDescriptorRunsItsHandlerOnTheConnectionsThreadUntilStopped() async throws {
    let bus = try PrivateBus()
    let connection = try await BusConnection.connect(to: .address(bus.address))
    var ends: [CInt] = [-1, -1]
    #expect(pipe(&ends) == 0)
    #expect(fcntl(ends[0], F_SETFL, O_NONBLOCK) == 0)
    defer {
      close(ends[0])
      close(ends[1])
    }
    let loopThread = await Task(executorPreference: connection.taskExecutor) {
      pthread_self()
    }.value
    let seen = Mutex<[(bytes: Int, onLoop: Bool)]>([])
    let readEnd = ends[0]
    let watch = await connection.watchReadable(readEnd) {
      var buffer = [UInt8](repeating: 0, count: 16)
      let count = read(readEnd, &buffer, buffer.count)
      seen.withLock { $0.append((count, pthread_equal(pthread_self(), loopThread) != 0)) }
    }
    #expect(write(ends[1], "ab", 2) == 2)
    let deadline = ContinuousClock.now + .seconds(10)
    while seen.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(5))
    }
    let first = seen.withLock { $0 }
    #expect(first.count == 1 && first[0].bytes == 2, "\(first)")
    #expect(first.first?.onLoop == true, "the handler ran on another thread")

    await connection.stopWatching(watch)
    #expect(write(ends[1], "c", 1) == 1)
    try await Task.sleep(for: .milliseconds(300))
    #expect(seen.withLock { $0.count } == 1, "the handler ran after the watch was stopped")
    await connection.close()
  }
}
