public import DBus
public import Foundation
import Synchronization
import SystemSupport

/// A D-Bus-activatable application, per the freedesktop Desktop Entry Specification: one
/// instance per user session owns the application id on the bus and serves
/// `org.freedesktop.Application` at the path derived from it; a second launch hands its
/// URLs to that instance and ends.
///
/// ```swift
/// switch try await Application.launch(id: "org.notifybus.ReadLater", opening: urls,
///                                     idleTimeout: .seconds(10)) {
/// case .remote(let owner):
///   print("handed to the running instance \(owner)")          // exit 0
/// case .primary(let application):
///   try await application.onOpenURL { url in                  // SwiftUI's .onOpenURL
///     try await importer.drainPending(handler)
///   }
/// }
/// ```
///
/// Every URL reaches the handler the same way, whichever way it came: on the command line
/// of the first launch (`Exec=app %U`), from a second launch, or in an `Open` call (the
/// bus's D-Bus activation, `gio open`, ``URLOpener``). An `Open` call is answered once its
/// handler returns, with an error when it throws.
///
/// With an idle timeout, like GApplication's inactivity timeout, the application ends once
/// no request has been handled, and no ``activity(_:)`` has run, for that long: it gives
/// up its name first, handles the requests already routed to it, and then ``run(_:)``
/// returns. A request that comes later starts a new instance through the bus.
public final class Application: Sendable {
  /// A request from the desktop, a second launch or another program.
  public enum Request: Sendable, Hashable {
    /// `Activate`: started or raised with nothing to open.
    case activate(platformData: [String: DBusValue])
    /// `Open`: open these URLs.
    case open([URL], platformData: [String: DBusValue])
    /// `ActivateAction`: run a desktop action, with its parameter (none or one value).
    case action(String, parameter: [DBusValue], platformData: [String: DBusValue])
  }

  /// How a launch went.
  public enum Launch: Sendable {
    /// This process is the application: handle its requests with ``run(_:)``.
    case primary(Application)
    /// Another process was the application; it was given the URLs (`Open`), or activated
    /// when there were none, and this one is done.
    case remote(owner: BusName)
  }

  /// The application id.
  public let id: ApplicationID
  /// The connection that owns ``id``'s name.
  public let connection: BusConnection
  /// How long the application stays without requests before it ends; `nil` for ever.
  public let idleTimeout: Duration?

  private struct Pending: Sendable {
    var request: Request
    var reply: Reply?
  }

  /// The answer to one call: resumed once; a call the application never handled (the
  /// queue dropped when ``run(_:)`` ended) is answered with an error when its request
  /// goes away, so no caller waits for ever.
  private final class Reply: Sendable {
    private let continuation: Mutex<CheckedContinuation<Void, any Error>?>

    init(_ continuation: CheckedContinuation<Void, any Error>) {
      self.continuation = Mutex(continuation)
    }

    func resume(_ result: Result<Void, any Error>) {
      continuation.withLock { slot in
        slot?.resume(with: result)
        slot = nil
      }
    }

    deinit {
      resume(.failure(DBusError(.failed, "the application ended before handling the call")))
    }
  }
  private struct State {
    var busy = 0
    var lastActivity = ContinuousClock.now
    var accepting = true
  }
  private let state = Mutex(State())
  private let requests: AsyncStream<Pending>
  private let submit: AsyncStream<Pending>.Continuation

  private init(id: ApplicationID, connection: BusConnection, idleTimeout: Duration?) {
    self.id = id
    self.connection = connection
    self.idleTimeout = idleTimeout
    (requests, submit) = AsyncStream.makeStream(of: Pending.self)
  }

  /// The bus an application uses unless told otherwise: the bus that started it by D-Bus
  /// activation (`DBUS_STARTER_ADDRESS`), else the automatic choice (`NOTIFYBUS_BUS_ADDRESS`,
  /// the session bus, the embedded bus).
  public static var defaultBus: Bus {
    if let text = Environment.value("DBUS_STARTER_ADDRESS"), let address = try? BusAddress(text) {
      return .address(address)
    }
    return .automatic
  }

  /// Becomes the application `id`, or hands `urls` to the instance that already is.
  ///
  /// The object is served before the name is requested, so calls the bus queued while
  /// starting this process (D-Bus activation) find it; they wait in ``run(_:)``'s queue,
  /// after `urls`.
  ///
  /// - Parameters:
  ///   - id: The application id.
  ///   - bus: The bus; ``defaultBus`` unless given.
  ///   - urls: What this launch was asked to open (its command line).
  ///   - idleTimeout: How long to stay without requests; `nil` for ever.
  /// - Returns: ``Launch/primary(_:)`` or ``Launch/remote(owner:)``.
  /// - Throws: ``ActivationError``: ``ActivationError/Code/bus`` when the bus cannot be
  ///   reached or refuses the name, ``ActivationError/Code/requestFailed`` when the running
  ///   instance refuses the URLs.
  public static func launch(
    id: ApplicationID, bus: Bus = defaultBus, opening urls: [URL] = [],
    idleTimeout: Duration? = nil
  ) async throws(ActivationError) -> Launch {
    let connection: BusConnection
    do {
      connection = try await BusConnection.connect(to: bus)
    } catch {
      throw ActivationError(
        .bus, "Cannot connect to the \(bus) bus for \(id): \(error.message)", cause: .dbus(error))
    }
    let application = Application(id: id, connection: connection, idleTimeout: idleTimeout)
    await connection.export(
      at: id.objectPath, interface: ApplicationInterface.name,
      introspectionXML: ApplicationInterface.introspectionXML
    ) { [weak application] message async throws(DBusError) -> [DBusValue] in
      guard let application else { throw DBusError(.failed, "\(id) is ending") }
      try await application.handle(message)
      return []
    }
    let reply: RequestNameReply
    do {
      reply = try await connection.requestName(id.busName, flags: [.doNotQueue])
    } catch {
      await connection.close()
      throw ActivationError(
        .bus, "Cannot own the name \(id) on the bus: \(error.message)", cause: .dbus(error))
    }
    guard reply == .exists else {
      if !urls.isEmpty { application.enqueue(.open(urls, platformData: [:])) }
      return .primary(application)
    }
    await connection.unexport(at: id.objectPath)
    let owner = (try? await connection.owner(of: id.busName)) ?? id.busName
    let call =
      urls.isEmpty
      ? ApplicationInterface.call(ApplicationInterface.activate, to: id, body: [.dictionary([:])])
      : ApplicationInterface.call(
        ApplicationInterface.open, to: id,
        body: [.array(elementType: "s", urls.map { .string($0.absoluteString) }), .dictionary([:])]
      )
    do {
      _ = try await connection.call(call)
      await connection.close()
    } catch {
      await connection.close()
      throw ActivationError(
        .requestFailed,
        "The running \(id) (\(owner)) refused \(urls.isEmpty ? "to activate" : "the URLs"): "
          + error.message, cause: .dbus(error))
    }
    return .remote(owner: owner)
  }

  /// Handles requests until the idle timeout ends the application (or the task is
  /// cancelled): the command line's URLs first, then each call, one at a time in the order
  /// they came.
  ///
  /// - Parameter handler: Handles one request; a throw becomes the call's error reply
  ///   (`org.freedesktop.DBus.Error.InvalidArgs` for an ``ActivationError`` with code
  ///   ``ActivationError/Code/invalidURL``).
  /// - Throws: What `handler` threw for the command line's URLs, which have no caller to
  ///   answer.
  public func run(_ handler: @Sendable (Request) async throws -> Void) async throws {
    let watcher = Task { await self.endWhenIdle() }
    defer { watcher.cancel() }
    for await pending in requests {
      do {
        try await handler(pending.request)
        pending.reply?.resume(.success(()))
      } catch {
        guard let reply = pending.reply else {
          await stop()
          throw error
        }
        reply.resume(.failure(error))
      }
      noteActivity()
    }
  }

  /// ``run(_:)`` for the URLs alone, like SwiftUI's `.onOpenURL`: `perform` gets each URL
  /// of every `Open`; `Activate` and actions only count as activity.
  public func onOpenURL(perform: @Sendable (URL) async throws -> Void) async throws {
    try await run { request in
      if case .open(let urls, _) = request {
        for url in urls { try await perform(url) }
      }
    }
  }

  /// Runs `body` as activity, for work the application does on its own.
  ///
  /// The idle timeout does not end the application meanwhile, and starts again when it
  /// returns: a drain on a notification, for example.
  public func activity<T>(_ body: () async throws -> T) async rethrows -> T {
    state.withLock { $0.busy += 1 }
    defer {
      state.withLock { state in
        state.busy -= 1
        state.lastActivity = .now
      }
    }
    return try await body()
  }

  /// Restarts the idle timeout.
  public func noteActivity() { state.withLock { $0.lastActivity = .now } }

  /// Ends the application: gives up its name, lets the requests already routed to it be
  /// handled, then ends ``run(_:)``.
  public func stop() async {
    guard state.withLock({ $0.accepting }) else { return }
    _ = try? await connection.releaseName(id.busName)
    // A round trip: every call routed to the name before the release has now arrived.
    _ = try? await connection.busID()
    // Calls that arrived start their handlers in tasks of their own; give them a moment.
    while true {
      try? await Task.sleep(for: .milliseconds(50))
      let idle = state.withLock { state in
        if state.busy == 0 { state.accepting = false }
        return !state.accepting
      }
      if idle { break }
    }
    submit.finish()
  }

  private func endWhenIdle() async {
    guard let idleTimeout else { return }
    while !Task.isCancelled {
      let (busy, last) = state.withLock { ($0.busy, $0.lastActivity) }
      let deadline = last + idleTimeout
      if busy == 0 && ContinuousClock.now >= deadline {
        await stop()
        return
      }
      do {
        try await Task.sleep(until: busy > 0 ? .now + idleTimeout : deadline)
      } catch {
        return
      }
    }
  }

  private func enqueue(_ request: Request) {
    state.withLock { $0.lastActivity = .now }
    submit.yield(Pending(request: request, reply: nil))
  }

  private func handle(_ message: Message) async throws(DBusError) {
    let request = try Self.request(from: message)
    let accepted = state.withLock { state in
      if state.accepting { state.busy += 1 }
      return state.accepting
    }
    guard accepted else { throw DBusError(.failed, "\(id) is ending; call again to start it") }
    defer {
      state.withLock { state in
        state.busy -= 1
        state.lastActivity = .now
      }
    }
    do {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        // A finished queue drops the request, and with it the reply, which then fails.
        submit.yield(Pending(request: request, reply: Reply(continuation)))
      }
    } catch let error as ActivationError where error.code == .invalidURL {
      throw DBusError(.invalidArgs, error.message)
    } catch let error as DBusError {
      throw error
    } catch {
      throw DBusError(.failed, "\(id) failed: \(error)")
    }
  }

  /// The request a call makes, its arguments checked.
  static func request(from message: Message) throws(DBusError) -> Request {
    let body = message.body
    func platformData(_ index: Int) throws(DBusError) -> [String: DBusValue] {
      guard index < body.count, let entries = body[index].stringDictionary else {
        throw DBusError(.invalidArgs, "platform_data must be an a{sv} dictionary")
      }
      return entries
    }
    switch message.member?.rawValue {
    case ApplicationInterface.activate.rawValue:
      guard message.signature.rawValue == "a{sv}" else { throw signatureError(message, "a{sv}") }
      return .activate(platformData: try platformData(0))
    case ApplicationInterface.open.rawValue:
      guard message.signature.rawValue == "asa{sv}", case .array(_, let values) = body[0] else {
        throw signatureError(message, "asa{sv}")
      }
      var urls: [URL] = []
      for value in values {
        let text = value.stringValue ?? ""
        guard let url = URL(string: text), url.scheme != nil else {
          throw DBusError(.invalidArgs, "'\(text)' is not an absolute URI")
        }
        urls.append(url)
      }
      return .open(urls, platformData: try platformData(1))
    case ApplicationInterface.activateAction.rawValue:
      guard message.signature.rawValue == "sava{sv}", let name = body[0].stringValue,
        case .array(_, let parameter) = body[1]
      else { throw signatureError(message, "sava{sv}") }
      return .action(
        name, parameter: parameter.map(\.unwrappingVariant), platformData: try platformData(2))
    default:
      throw DBusError(
        .unknownMethod,
        "org.freedesktop.Application has no method '\(message.member?.rawValue ?? "")'")
    }
  }

  private static func signatureError(_ message: Message, _ expected: String) -> DBusError {
    DBusError(
      .invalidArgs,
      "\(message.member?.rawValue ?? "the call") takes (\(expected)), not "
        + "(\(message.signature.rawValue))")
  }

  /// The URLs of command-line arguments, as `%U` passes them: an argument with a scheme
  /// (`readlater://import`, `file:///tmp/a`) is a URL; any other is a path, made an
  /// absolute `file:` URL.
  public static func urls(fromArguments arguments: [String]) -> [URL] {
    arguments.map { argument in
      if let colon = argument.firstIndex(of: ":"),
        let first = argument.first, first.isASCII, first.isLetter,
        argument[..<colon].allSatisfy({
          $0.isASCII && ($0.isLetter || $0.isNumber || "+.-".contains($0))
        }),
        let url = URL(string: argument)
      {
        return url
      }
      return URL(fileURLWithPath: absolutePath(argument))
    }
  }
}
