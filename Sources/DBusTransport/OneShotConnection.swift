public import DBusCodec
import DBusEmbeddedBus
public import DBusMessages
import SystemSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A blocking bus connection for short single-threaded programs, such as `notify-post`:
/// D-Bus spoken in Swift over a Unix socket, with no libdbus, no threads and no concurrency
/// runtime, so a program that posts and exits can be one small static executable.
///
/// Nothing is written until ``flush(timeoutMilliseconds:)``, ``call(_:timeoutMilliseconds:)``
/// or ``reply(to:timeoutMilliseconds:)``: authentication (SASL `EXTERNAL`), `Hello` and every queued message then go out in one
/// write, and one round trip with the bus confirms them all.
///
/// ```swift
/// let connection = try OneShotConnection(to: .session)
/// try connection.send(.signal(path: "/a", interface: "a.b", member: "C"))
/// try connection.flush()
/// ```
///
/// Messages that arrive other than the replies waited for (such as `NameAcquired`) are
/// dropped. Use `BusConnection` for anything that receives or lives long.
///
/// Not `Sendable`: use it from the thread that made it.
public final class OneShotConnection {
  /// The address reached.
  public let address: BusAddress
  /// The unique name the bus gave this connection, once its reply to `Hello` has been read.
  public private(set) var uniqueName: BusName?
  /// The server's `guid` (its SASL `OK` line, the `guid` key of its address), once read.
  public private(set) var serverGUID: String?

  private let stream: UnixStream
  private var outgoing: [UInt8]
  private var incoming: [UInt8] = []
  private var authenticated = false
  /// `Hello` is the first message, serial 1.
  private let helloSerial: UInt32 = 1
  private var lastSerial: UInt32 = 1

  /// Connects, resolving `bus` as `BusConnection` does (starting the embedded bus when
  /// it is the one chosen), and queues authentication and `Hello`.
  ///
  /// - Throws: ``DBusError`` when no bus can be reached or the address is malformed.
  public init(to bus: Bus = .automatic) throws(DBusError) {
    (stream, address) = try Self.connect(to: bus)
    var hello = Self.bus(member: "Hello")
    hello.serial = helloSerial
    outgoing = try ExternalAuthentication.request(uid: geteuid()) + hello.marshalled()
  }

  /// The first of `bus`'s candidates that accepts a connection.
  private static func connect(to bus: Bus) throws(DBusError) -> (UnixStream, BusAddress) {
    var lastError = DBusError(.noServer, "no bus to try")
    for candidate in try bus.candidates() {
      do throws(DBusError) {
        let address: BusAddress
        if let candidateAddress = candidate.address {
          address = candidateAddress
        } else {
          address = try EmbeddedBus.start()
        }
        return (try UnixStream(connectingTo: address), address)
      } catch {
        lastError = error
        // An address this connection cannot use is not a missing bus: falling through to
        // the embedded bus would post where no one listens.
        if !candidate.fallsThrough || error.name == .badAddress { throw error }
      }
    }
    throw lastError
  }

  /// Queues a message; ``flush(timeoutMilliseconds:)`` writes it.
  ///
  /// - Throws: ``DBusError`` when the message is malformed.
  public func send(_ message: Message) throws(DBusError) {
    _ = try enqueue(message)
  }

  /// Writes every queued message, then waits until the bus has read them all: it answers
  /// a call queued after them (`GetId`), and reads messages in order.
  ///
  /// - Throws: ``DBusError``: authentication or `Hello` failed, the connection broke, or
  ///   ``DBusError/Name/noReply`` after `timeoutMilliseconds`.
  public func flush(timeoutMilliseconds: Int = 25_000) throws(DBusError) {
    _ = try call(Self.bus(member: "GetId"), timeoutMilliseconds: timeoutMilliseconds)
  }

  /// Writes every queued message and `message`, then blocks until the reply to `message`.
  ///
  /// - Returns: The method return.
  /// - Throws: ``DBusError``: the peer's error reply as it sent it, or a failure of the
  ///   connection, as ``reply(to:timeoutMilliseconds:)`` throws.
  public func call(_ message: Message, timeoutMilliseconds: Int = 25_000) throws(DBusError)
    -> Message
  {
    let reply = try reply(to: message, timeoutMilliseconds: timeoutMilliseconds)
    if let error = reply.error { throw error }
    return reply
  }

  /// Writes every queued message and `message`, then blocks until the reply to `message`,
  /// which may be an error reply: the peer's answer, told apart from the connection's
  /// failures.
  ///
  /// - Returns: The method return or error reply.
  /// - Throws: ``DBusError`` only when the connection fails: authentication or `Hello`
  ///   failed, the bus closed the connection or sent a malformed message, or
  ///   ``DBusError/Name/noReply`` after `timeoutMilliseconds`.
  public func reply(to message: Message, timeoutMilliseconds: Int = 25_000) throws(DBusError)
    -> Message
  {
    let serial = try enqueue(message)
    let (nanoseconds, overflow) = max(0, timeoutMilliseconds).multipliedReportingOverflow(
      by: 1_000_000)
    let (deadline, late) = MonotonicClock.now.addingReportingOverflow(nanoseconds)
    do {
      try stream.write(outgoing)
    } catch {
      throw DBusError(.disconnected, "cannot write to the bus at \(address): \(error)")
    }
    outgoing.removeAll()
    while true {
      let reply = try nextReply(deadline: overflow || late ? .max : deadline, waitingFor: message)
      if reply.replySerial == serial { return reply }
    }
  }

  private func enqueue(_ message: Message) throws(DBusError) -> UInt32 {
    var message = message
    lastSerial &+= 1
    message.serial = lastSerial
    outgoing += try message.marshalled()
    return lastSerial
  }

  /// Reads until the next method return or error reply, handling the one to `Hello`.
  private func nextReply(deadline: Int, waitingFor call: Message) throws(DBusError) -> Message {
    var consumed = 0
    defer { incoming.removeFirst(consumed) }
    while true {
      if !authenticated,
        case .accepted(let guid, let length) = try ExternalAuthentication.answer(
          in: incoming[consumed...])
      {
        consumed += length
        authenticated = true
        serverGUID = guid
      }
      if authenticated, let length = try Message.wireLength(ofPrefix: incoming[consumed...]),
        incoming.count - consumed >= length
      {
        let bytes = Array(incoming[consumed..<consumed + length])
        consumed += length
        guard (1...4).contains(bytes[1]) else { continue }  // unknown types are ignored
        let message = try Message(marshalled: bytes)
        guard message.kind == .methodReturn || message.kind == .error else { continue }
        if message.replySerial == helloSerial {
          if let error = message.error {
            throw DBusError(error.name, "the bus at \(address) refused Hello: \(error.message)")
          }
          uniqueName = message.body.first?.stringValue.flatMap { BusName(rawValue: $0) }
          continue
        }
        return message
      }
      incoming.removeFirst(consumed)
      consumed = 0
      let open: Bool
      do {
        open = try stream.read(into: &incoming, deadline: deadline)
      } catch let error where error.rawValue == ETIMEDOUT {
        throw DBusError(
          .noReply, "no reply to \(call.member?.rawValue ?? "the call") from \(address) in time")
      } catch {
        throw DBusError(.ioError, "cannot read from the bus at \(address): \(error)")
      }
      guard open else {
        throw DBusError(
          .disconnected,
          "the bus at \(address) closed the connection"
            + (authenticated ? "" : " during authentication"))
      }
    }
  }

  /// A call to the bus itself.
  private static func bus(member: MemberName) -> Message {
    .methodCall(
      destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
      interface: "org.freedesktop.DBus", member: member)
  }
}
