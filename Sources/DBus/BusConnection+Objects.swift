/// A method handler for an exported object: it receives the call and returns the reply's
/// body, or throws a ``DBusError`` that is sent back as an error reply.
public typealias MethodHandler = @Sendable (Message) async throws(DBusError) -> [DBusValue]

/// A method handler that answers a call at once, on the connection's thread, while the
/// call is being dispatched: it returns the reply's body, throws a ``DBusError`` that is
/// sent back as an error reply, or returns `nil` to hand the call to the interface's
/// ``MethodHandler``.
///
/// It runs inside libdbus's dispatch on the connection's thread, so it must not wait (for
/// a lock held across a wait, for I/O, for another task), and whatever time it takes
/// delays every other message of the connection, calls and signals alike (return `nil` to
/// leave long work to the ``MethodHandler``, which can hop off the connection's thread). It
/// may send, and what it sends goes out before its reply.
public typealias ImmediateMethodHandler = @Sendable (Message) throws(DBusError) -> [DBusValue]?

/// How an exported interface answers its calls.
struct InterfaceHandlers {
  var immediate: ImmediateMethodHandler?
  var handler: MethodHandler
}

/// An object this connection serves at a path.
struct ExportedObject {
  var interfaces: [InterfaceName: InterfaceHandlers]
  var introspection: [InterfaceName: String]
}

extension BusConnection {
  /// Serves method calls for `interface` on the object at `path`.
  ///
  /// Each call runs `handler` in a new task; its result becomes the reply (unless the
  /// caller asked for none). With `immediately`, a call is first offered to it on the
  /// connection's thread as it is dispatched, when no earlier call of the same caller is
  /// still being handled: what it answers is the reply, sent at once, without a task or a
  /// turn of the loop; when it returns `nil`, the call goes to `handler` as above. One
  /// caller's calls are handled in the order they arrived, each after the previous one
  /// finished; calls from different callers run concurrently. Calls to an interface the
  /// object does not have get
  /// ``DBusError/Name/unknownInterface``. `org.freedesktop.DBus.Introspectable` is
  /// answered from `introspectionXML` (the `<interface>` elements), and
  /// `org.freedesktop.DBus.Peer` by libdbus.
  ///
  /// - Parameters:
  ///   - path: The object path.
  ///   - interface: The interface the handler serves.
  ///   - introspectionXML: This interface's `<interface>` element, for introspection.
  ///   - immediately: Answers the calls it can at once, on the connection's thread.
  ///   - handler: Answers calls.
  public func export(
    at path: ObjectPath,
    interface: InterfaceName,
    introspectionXML: String? = nil,
    immediately: ImmediateMethodHandler? = nil,
    handler: @escaping MethodHandler
  ) {
    var object = objects[path] ?? ExportedObject(interfaces: [:], introspection: [:])
    object.interfaces[interface] = InterfaceHandlers(immediate: immediately, handler: handler)
    object.introspection[interface] = introspectionXML
    objects[path] = object
  }

  /// Stops serving `interface` at `path`, or every interface when `interface` is `nil`.
  public func unexport(at path: ObjectPath, interface: InterfaceName? = nil) {
    guard let interface else {
      objects[path] = nil
      return
    }
    objects[path]?.interfaces[interface] = nil
    objects[path]?.introspection[interface] = nil
    if objects[path]?.interfaces.isEmpty == true { objects[path] = nil }
  }

  /// Handles a method call to an exported object, on the loop thread; `raw` is the libdbus
  /// message `call` was decoded from, while it is being dispatched, for an answer given at
  /// once to be built from.
  func handleMethodCall(_ call: Message, raw: OpaquePointer?, object: ExportedObject) {
    if call.interface?.rawValue == "org.freedesktop.DBus.Introspectable"
      && call.member?.rawValue == "Introspect"
    {
      let children = call.path.map(childNodes(of:)) ?? []
      reply(
        to: call, raw: raw,
        with: .success([.string(Self.introspectionDocument(object, childNodes: children))]))
      return
    }
    let handlers: InterfaceHandlers?
    if let interface = call.interface {
      handlers = object.interfaces[interface]
    } else {
      handlers = object.interfaces.count == 1 ? object.interfaces.first?.value : nil
    }
    guard let handlers else {
      let name = call.interface?.rawValue ?? "(none)"
      reply(
        to: call, raw: raw,
        with: .failure(
          DBusError(
            .unknownInterface,
            "object \(call.path?.rawValue ?? "") has no interface '\(name)'")))
      return
    }
    // Each caller's calls are handled one after another, in the order they arrived: the
    // handler may run off this thread, so without the chain a caller's pipelined calls
    // could overtake each other. Different callers still run concurrently.
    // (Not hashed when no caller has a call under way, the usual case.)
    let previous = callChains.isEmpty ? nil : call.sender.flatMap { callChains[$0]?.task }
    // Answered here only when nothing of this caller is still under way, so that it
    // cannot overtake the caller's earlier calls.
    if previous == nil, let immediate = handlers.immediate {
      let answer: Result<[DBusValue], DBusError>?
      do throws(DBusError) {
        answer = try immediate(call).map { .success($0) }
      } catch {
        answer = .failure(error)
      }
      if let answer {
        reply(to: call, raw: raw, with: answer)
        return
      }
    }
    let handler = handlers.handler
    let id = nextIdentifier
    nextIdentifier += 1
    let task = Task {
      await previous?.value
      let result: Result<[DBusValue], DBusError>
      do throws(DBusError) {
        result = .success(try await handler(call))
      } catch {
        result = .failure(error)
      }
      self.reply(to: call, raw: nil, with: result)
      if let sender = call.sender, self.callChains[sender]?.id == id {
        self.callChains[sender] = nil
      }
    }
    if let sender = call.sender { callChains[sender] = (id, task) }
  }

  /// Sends `result` as the reply to `call`, unless the caller wants none.
  ///
  /// The reply is built from `raw`, the libdbus call, when it is still at hand and the
  /// reply is small (``MessageCoding/makeRawReply(to:with:)``), else from `call`. An
  /// error whose name is not valid goes as ``DBusError/Name/failed``; a reply that cannot
  /// be sent, as an error saying why.
  private func reply(
    to call: Message, raw: OpaquePointer?, with result: Result<[DBusValue], DBusError>
  ) {
    guard !call.noReplyExpected else { return }
    var result = result
    if case .failure(var error) = result, !InterfaceName.isValid(error.name.rawValue) {
      error.name = .failed
      result = .failure(error)
    }
    do throws(DBusError) {
      if let raw, let built = try MessageCoding.makeRawReply(to: raw, with: result) {
        try send(OutgoingMessage(raw: built))
        return
      }
      switch result {
      case .success(let body): try send(call.makeReply(body: body))
      case .failure(let error): try send(call.makeErrorReply(error))
      }
    } catch {
      try? send(call.makeErrorReply(error))
    }
  }

  /// The names of the nodes directly below `path` that lead to exported objects, sorted.
  func childNodes(of path: ObjectPath) -> [String] {
    let prefix = path.rawValue == "/" ? "/" : path.rawValue + "/"
    var names: Set<Substring> = []
    for exported in objects.keys where exported.rawValue.hasPrefix(prefix) {
      let rest = exported.rawValue.dropFirst(prefix.count)
      if let name = rest.split(separator: "/").first { names.insert(name) }
    }
    return names.map(String.init).sorted()
  }

  static func introspectionDocument(_ object: ExportedObject, childNodes: [String]) -> String {
    introspectionDocument(
      interfaceXML: object.introspection.sorted { $0.key < $1.key }.map(\.value),
      childNodes: childNodes)
  }

  /// The introspection document an exported object serves: the standard
  /// `Introspectable` and `Peer` interfaces, then each `<interface>` element given, one per
  /// line, then a `<node name="..."/>` for each child node (the next path element of the
  /// objects exported below it).
  ///
  /// Services use it to publish the exact document they serve (for example in
  /// `Protocol/`).
  public static func introspectionDocument(interfaceXML: [String], childNodes: [String] = [])
    -> String
  {
    var document = """
      <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
       "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
      <node>
        <interface name="org.freedesktop.DBus.Introspectable">
          <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
        </interface>
        <interface name="org.freedesktop.DBus.Peer">
          <method name="Ping"/>
          <method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
        </interface>

      """
    for xml in interfaceXML { document += xml + "\n" }
    for name in childNodes { document += "  <node name=\"\(name)\"/>\n" }
    return document + "</node>\n"
  }
}
