/// A method handler for an exported object: it receives the call and returns the reply's
/// body, or throws a ``DBusError`` that is sent back as an error reply.
public typealias MethodHandler = @Sendable (Message) async throws(DBusError) -> [DBusValue]

/// An object this connection serves at a path.
struct ExportedObject {
  var interfaces: [InterfaceName: MethodHandler]
  var introspection: [InterfaceName: String]
}

extension BusConnection {
  /// Serves method calls for `interface` on the object at `path`.
  ///
  /// Each call runs `handler` in a new task; its result becomes the reply (unless the
  /// caller asked for none). One caller's calls are handled in the order they arrived,
  /// each after the previous one finished; calls from different callers run
  /// concurrently. Calls to an interface the object does not have get
  /// ``DBusError/Name/unknownInterface``. `org.freedesktop.DBus.Introspectable` is
  /// answered from `introspectionXML` (the `<interface>` elements), and
  /// `org.freedesktop.DBus.Peer` by libdbus.
  ///
  /// - Parameters:
  ///   - path: The object path.
  ///   - interface: The interface the handler serves.
  ///   - introspectionXML: This interface's `<interface>` element, for introspection.
  ///   - handler: Answers calls.
  public func export(
    at path: ObjectPath,
    interface: InterfaceName,
    introspectionXML: String? = nil,
    handler: @escaping MethodHandler
  ) {
    var object = objects[path] ?? ExportedObject(interfaces: [:], introspection: [:])
    object.interfaces[interface] = handler
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

  func handleMethodCall(_ call: Message, object: ExportedObject) {
    if call.interface?.rawValue == "org.freedesktop.DBus.Introspectable"
      && call.member?.rawValue == "Introspect"
    {
      let children = call.path.map(childNodes(of:)) ?? []
      reply(
        to: call,
        with: .success([.string(Self.introspectionDocument(object, childNodes: children))]))
      return
    }
    let handler: MethodHandler?
    if let interface = call.interface {
      handler = object.interfaces[interface]
    } else {
      handler = object.interfaces.count == 1 ? object.interfaces.first?.value : nil
    }
    guard let handler else {
      let name = call.interface?.rawValue ?? "(none)"
      reply(
        to: call,
        with: .failure(
          DBusError(
            .unknownInterface,
            "object \(call.path?.rawValue ?? "") has no interface '\(name)'")))
      return
    }
    // Each caller's calls are handled one after another, in the order they arrived: the
    // handler may run off this thread, so without the chain a caller's pipelined calls
    // could overtake each other. Different callers still run concurrently.
    let previous = call.sender.flatMap { callChains[$0]?.task }
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
      self.reply(to: call, with: result)
      if let sender = call.sender, self.callChains[sender]?.id == id {
        self.callChains[sender] = nil
      }
    }
    if let sender = call.sender { callChains[sender] = (id, task) }
  }

  private func reply(to call: Message, with result: Result<[DBusValue], DBusError>) {
    guard !call.noReplyExpected else { return }
    let reply: Message
    switch result {
    case .success(let body): reply = call.makeReply(body: body)
    case .failure(let error):
      var error = error
      if !InterfaceName.isValid(error.name.rawValue) { error.name = .failed }
      reply = call.makeErrorReply(error)
    }
    do {
      try send(reply)
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
