import BusTestSupport
import DBus
import Dispatch
import Synchronization
import Testing

/// Method calls made while connected: written on the caller's thread, resumed from the
/// connection's thread by their reply, a timeout, a cancellation or the loss of the
/// connection.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
struct CallTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  func connect() async throws -> BusConnection {
    try await BusConnection.connect(to: .address(bus.address))
  }

  /// A server with `Echo` (returns its arguments) and `Wait` (answers after 5 s).
  func server() async throws -> (connection: BusConnection, name: BusName) {
    let server = try await connect()
    await server.export(at: "/calls", interface: "org.notifybus.Calls") { call in
      if call.member == "Wait" { try? await Task.sleep(for: .seconds(5)) }
      return call.body
    }
    return (server, try #require(await server.uniqueName))
  }

  static func call(_ member: MemberName, to name: BusName, _ body: [DBusValue] = []) -> Message {
    .methodCall(
      destination: name, path: "/calls", interface: "org.notifybus.Calls", member: member,
      body: body)
  }

  @Test func concurrentCallsEachGetTheirOwnReply() async throws {
    let (server, name) = try await server()
    let client = try await connect()
    try await withThrowingTaskGroup(of: Void.self) { group in
      for index in 0..<64 {
        group.addTask {
          let reply = try await client.call(Self.call("Echo", to: name, [.uint32(UInt32(index))]))
          #expect(reply.body == [.uint32(UInt32(index))])
        }
      }
      try await group.waitForAll()
    }
    await client.close()
    await server.close()
  }

  @Test func aShortTimeoutEndsItsCallWhileALongerOneWaits() async throws {
    let (server, name) = try await server()
    let client = try await connect()
    // The long call sets the timer for its deadline; the short one must bring it forward.
    let long = Task { try await client.call(Self.call("Wait", to: name), timeout: .seconds(30)) }
    try await Task.sleep(for: .milliseconds(50))
    let error = await #expect(throws: DBusError.self) {
      _ = try await client.call(Self.call("Wait", to: name), timeout: .milliseconds(200))
    }
    // No reply: had the timer been left at the long call's deadline, the server's answer
    // (after 5 s) would have ended this call with a reply, however loaded the machine.
    #expect(error?.name == .noReply)
    // The long call is still waiting, and gets its answer.
    let reply = try await long.value
    #expect(reply.member == nil && reply.kind == .methodReturn)
    await client.close()
    await server.close()
  }

  @Test func cancellingTheCallerEndsTheCall() async throws {
    let (server, name) = try await server()
    let client = try await connect()
    let task = Task { try await client.call(Self.call("Wait", to: name)) }
    try await Task.sleep(for: .milliseconds(100))
    task.cancel()
    let result = await task.result
    #expect(throws: DBusError.self) { try result.get() }
    // No reply: a call that went on waiting would have ended with the server's answer
    // after 5 s, well before the default timeout, however loaded the machine.
    if case .failure(let error as DBusError) = result { #expect(error.name == .noReply) }
    // The connection still works, and the late reply to the cancelled call is ignored.
    let reply = try await client.call(Self.call("Echo", to: name, [.string("after")]))
    #expect(reply.body == [.string("after")])
    await client.close()
    await server.close()
  }

  @Test func aCallInACancelledTaskEndsAtOnce() async throws {
    let (server, name) = try await server()
    let client = try await connect()
    let task = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      return try await client.call(Self.call("Wait", to: name))
    }
    let result = await task.result
    #expect(throws: DBusError.self) { try result.get() }
    await client.close()
    await server.close()
  }

  @Test func closingTheConnectionEndsItsCalls() async throws {
    let (server, name) = try await server()
    let client = try await connect()
    let task = Task { try await client.call(Self.call("Wait", to: name)) }
    try await Task.sleep(for: .milliseconds(100))
    await client.close()
    let result = await task.result
    if case .failure(let error as DBusError) = result {
      #expect(error.name == .disconnected)
    } else {
      Issue.record("the call did not fail: \(result)")
    }
    await #expect(throws: DBusError.self) { _ = try await client.call(Self.call("Echo", to: name)) }
    await server.close()
  }

  /// Code isolated to the connection runs on its thread, which also reads the reply: the
  /// call must not wait for the thread it runs on.
  @Test func aCallFromTheConnectionsOwnThreadCompletes() async throws {
    let (server, name) = try await server()
    let client = try await connect()
    func echo(on connection: isolated BusConnection) async throws -> Message {
      #expect(connection.isOnConnectionThread)
      let reply = try await connection.call(Self.call("Echo", to: name, [.string("own thread")]))
      #expect(connection.isOnConnectionThread)
      return reply
    }
    #expect(try await echo(on: client).body == [.string("own thread")])
    await client.close()
    await server.close()
  }

  /// A method handler calls another peer through its own connection while it answers.
  @Test func aMethodHandlerCallsThroughItsOwnConnection() async throws {
    let (echoServer, echoName) = try await server()
    let relay = try await connect()
    await relay.export(at: "/relay", interface: "org.notifybus.Relay") { call throws(DBusError) in
      try await relay.call(Self.call("Echo", to: echoName, call.body)).body
    }
    let relayName = try #require(await relay.uniqueName)
    let client = try await connect()
    let reply = try await client.call(
      .methodCall(
        destination: relayName, path: "/relay", interface: "org.notifybus.Relay",
        member: "Forward", body: [.string("relayed")]))
    #expect(reply.body == [.string("relayed")])
    await client.close()
    await relay.close()
    await echoServer.close()
  }

  @Test func anErrorReplyIsThrown() async throws {
    let client = try await connect()
    let error = await #expect(throws: DBusError.self) {
      _ = try await client.call(
        .methodCall(
          destination: "org.notifybus.Nobody", path: "/", interface: "org.notifybus.Nobody",
          member: "Hello"))
    }
    #expect(error?.name == .serviceUnknown)
    await client.close()
  }
}

/// Calls from a task that prefers the connection's executor run on its thread throughout.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(3)))
struct CallsOnTheConnectionsExecutorTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  @Test func aCallFromATaskOnTheConnectionsExecutorStaysOnItsThread() async throws {
    let server = try await BusConnection.connect(to: .address(bus.address))
    await server.export(at: "/calls", interface: "org.notifybus.Calls") { call in
      if call.member == "Wait" { try? await Task.sleep(for: .seconds(5)) }
      return call.body
    }
    let name = try #require(await server.uniqueName)
    let client = try await BusConnection.connect(to: .address(bus.address))
    let threads = try await Task(executorPreference: client.taskExecutor) {
      var onThread: [Bool] = []
      for index in 0..<20 {
        onThread.append(client.isOnConnectionThread)
        let reply = try await client.call(
          CallTests.call("Echo", to: name, [.uint32(UInt32(index))]))
        #expect(reply.body == [.uint32(UInt32(index))])
        onThread.append(client.isOnConnectionThread)
      }
      // A timeout still ends a call made there.
      let error = await #expect(throws: DBusError.self) {
        _ = try await client.call(CallTests.call("Wait", to: name), timeout: .milliseconds(100))
      }
      #expect(error?.name == .noReply)
      onThread.append(client.isOnConnectionThread)
      return onThread
    }.value
    #expect(threads.allSatisfy { $0 })
    await client.close()
    await server.close()
  }

  @Test func aReplyResumesAnActorsCallerStraightFromTheConnectionsThread() async throws {
    let server = try await BusConnection.connect(to: .address(bus.address))
    await server.export(at: "/calls", interface: "org.notifybus.Calls") { $0.body }
    let name = try #require(await server.uniqueName)
    let client = try await BusConnection.connect(to: .address(bus.address))
    let caller = RecordingCaller(client)
    let replies = try await caller.echo(20, to: name)
    #expect(replies == (0..<20).map { [.uint32(UInt32($0))] })
    // At most one job per call came from another thread, the reply's, from the
    // connection's own: the caller neither waited on nor was resumed through a thread of
    // the global pool. (Jobs the actor gives itself, on its own queue, switch no thread;
    // a reply that arrives before the caller waits for it resumes it with none.)
    let jobs = caller.executor.jobs.withLock { $0 }.filter { $0 != .itself }
    #expect(jobs.count <= 20)
    #expect(jobs.allSatisfy { $0 == .connection })
    await client.close()
    await server.close()
  }

  @Test func aDefaultActorsCodeAfterACallDoesNotRunOnTheConnectionsThread() async throws {
    let server = try await BusConnection.connect(to: .address(bus.address))
    await server.export(at: "/calls", interface: "org.notifybus.Calls") { $0.body }
    let name = try #require(await server.uniqueName)
    let client = try await BusConnection.connect(to: .address(bus.address))
    let onConnectionThread = try await PlainCaller(client).call(20, to: name)
    #expect(onConnectionThread == Array(repeating: false, count: 20))
    await client.close()
    await server.close()
  }
}

/// A default actor: it runs on its task's preferred executor, so a call must not leave it
/// on the connection's thread.
actor PlainCaller {
  let client: BusConnection
  init(_ client: BusConnection) { self.client = client }

  /// Makes `count` calls; after each, whether this actor's code runs on the connection's
  /// thread.
  func call(_ count: Int, to name: BusName) async throws -> [Bool] {
    var onConnectionThread: [Bool] = []
    for index in 0..<count {
      _ = try await client.call(CallTests.call("Echo", to: name, [.uint32(UInt32(index))]))
      onConnectionThread.append(client.isOnConnectionThread)
    }
    return onConnectionThread
  }
}

/// An actor on a serial queue of its own whose executor records, for every job it is given
/// while ``RecordingCaller/echo(_:to:)`` makes its calls, which thread gave it.
actor RecordingCaller {
  enum Source: Equatable, Sendable {
    /// The connection's thread.
    case connection
    /// The actor's own queue.
    case itself
    /// Any other thread.
    case other
  }

  final class Executor: SerialExecutor {
    static let key = DispatchSpecificKey<Bool>()
    let queue = DispatchQueue(label: "RecordingCaller")
    let client: BusConnection
    let recording = Atomic<Bool>(false)
    let jobs = Mutex<[Source]>([])

    init(_ client: BusConnection) {
      self.client = client
      queue.setSpecific(key: Self.key, value: true)
    }

    func enqueue(_ job: consuming ExecutorJob) {
      if recording.load(ordering: .acquiring) {
        let source: Source =
          client.isOnConnectionThread
          ? .connection : DispatchQueue.getSpecific(key: Self.key) == true ? .itself : .other
        jobs.withLock { $0.append(source) }
      }
      let job = UnownedJob(job)
      queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }
  }

  let client: BusConnection
  nonisolated let executor: Executor
  nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

  init(_ client: BusConnection) {
    self.client = client
    executor = Executor(client)
  }

  /// Calls `Echo` `count` times, one after another, from the actor.
  func echo(_ count: Int, to name: BusName) async throws -> [[DBusValue]] {
    var replies: [[DBusValue]] = []
    executor.recording.store(true, ordering: .releasing)
    defer { executor.recording.store(false, ordering: .releasing) }
    for index in 0..<count {
      replies.append(
        try await client.call(CallTests.call("Echo", to: name, [.uint32(UInt32(index))])).body)
    }
    return replies
  }
}
