public import DBusCodec

/// A D-Bus message as a value: a method call, a reply, an error or a signal.
///
/// Messages cross isolation domains freely; the libdbus object behind a sent or received
/// message never leaves the connection that owns it.
///
/// ```swift
/// let posted = Message.signal(
///   path: "/org/notifybus/Notify1",
///   interface: "org.notifybus.Notify1",
///   member: "Posted",
///   body: [.string("group.example.saved")])
/// ```
public struct Message: Hashable, Sendable {
  /// The four kinds of D-Bus message.
  public enum Kind: Hashable, Sendable {
    case methodCall
    case methodReturn
    case error
    case signal
  }

  /// What kind of message this is.
  public var kind: Kind
  /// The object the message is to or from.
  ///
  /// Required for method calls and signals.
  public var path: ObjectPath?
  /// The interface of the method or signal.
  ///
  /// Required for signals.
  public var interface: InterfaceName?
  /// The method or signal name.
  ///
  /// Required for method calls and signals.
  public var member: MemberName?
  /// The error name of an error reply.
  public var errorName: DBusError.Name?
  /// The connection the message is addressed to, if any.
  public var destination: BusName?
  /// The unique name of the sending connection, filled in by the bus.
  public var sender: BusName?
  /// The serial number the sender gave the message; zero before it is sent.
  public var serial: UInt32
  /// For replies, the serial of the call being answered.
  public var replySerial: UInt32
  /// For method calls: the caller does not want a reply.
  public var noReplyExpected: Bool
  /// For method calls: the bus may not start a service to deliver this call.
  public var noAutoStart: Bool
  /// The arguments.
  public var body: [DBusValue]

  /// Creates a message of any kind; prefer the static factories.
  public init(
    kind: Kind,
    path: ObjectPath? = nil,
    interface: InterfaceName? = nil,
    member: MemberName? = nil,
    errorName: DBusError.Name? = nil,
    destination: BusName? = nil,
    sender: BusName? = nil,
    serial: UInt32 = 0,
    replySerial: UInt32 = 0,
    noReplyExpected: Bool = false,
    noAutoStart: Bool = false,
    body: [DBusValue] = []
  ) {
    self.kind = kind
    self.path = path
    self.interface = interface
    self.member = member
    self.errorName = errorName
    self.destination = destination
    self.sender = sender
    self.serial = serial
    self.replySerial = replySerial
    self.noReplyExpected = noReplyExpected
    self.noAutoStart = noAutoStart
    self.body = body
  }

  /// A signal, broadcast unless `destination` is given.
  public static func signal(
    path: ObjectPath,
    interface: InterfaceName,
    member: MemberName,
    destination: BusName? = nil,
    body: [DBusValue] = []
  ) -> Message {
    Message(
      kind: .signal, path: path, interface: interface, member: member,
      destination: destination, body: body)
  }

  /// A method call to `destination`.
  public static func methodCall(
    destination: BusName?,
    path: ObjectPath,
    interface: InterfaceName?,
    member: MemberName,
    body: [DBusValue] = []
  ) -> Message {
    Message(
      kind: .methodCall, path: path, interface: interface, member: member,
      destination: destination, body: body)
  }

  /// A successful reply to this method call.
  public func makeReply(body: [DBusValue] = []) -> Message {
    Message(kind: .methodReturn, destination: sender, replySerial: serial, body: body)
  }

  /// An error reply to this method call.
  public func makeErrorReply(_ error: DBusError) -> Message {
    Message(
      kind: .error, errorName: error.name, destination: sender, replySerial: serial,
      body: [.string(error.message)])
  }

  /// The signature of the body.
  public var signature: Signature {
    Signature(unchecked: body.map(\.signatureString).joined())
  }

  /// Whether the body's signature is `expected`, compared code by code with the
  /// arguments; ``signature`` is built only when an argument is a container (more than one
  /// type code) or the counts differ.
  package func hasSignature(_ expected: StaticString) -> Bool {
    let codes = UnsafeBufferPointer(start: expected.utf8Start, count: expected.utf8CodeUnitCount)
    guard codes.count == body.count else { return signature.rawValue == "\(expected)" }
    for (value, code) in zip(body, codes) {
      guard let valueCode = value.typeCode else { return signature.rawValue == "\(expected)" }
      if valueCode != code { return false }
    }
    return true
  }

  /// For an error reply, the error it carries.
  public var error: DBusError? {
    guard kind == .error else { return nil }
    return DBusError(errorName ?? .failed, body.first?.stringValue ?? "")
  }

  /// Checks that the header fields this kind of message needs are present and that the
  /// body is well formed.
  ///
  /// - Throws: ``DBusError`` naming what is missing or malformed.
  public func validate() throws(DBusError) {
    switch kind {
    case .methodCall:
      guard path != nil, member != nil else {
        throw DBusError(.invalidArgs, "a method call needs a path and a member")
      }
    case .signal:
      guard path != nil, interface != nil, member != nil else {
        throw DBusError(.invalidArgs, "a signal needs a path, an interface and a member")
      }
    case .error:
      guard let errorName, InterfaceName.isValid(errorName.rawValue) else {
        throw DBusError(
          .invalidArgs,
          "an error reply needs a valid error name, not '\(errorName?.rawValue ?? "")'")
      }
      fallthrough
    case .methodReturn:
      guard replySerial != 0 else {
        throw DBusError(.invalidArgs, "a reply needs the serial of the call it answers")
      }
    }
    // A body of basic values and byte arrays has a valid signature when it is short
    // enough (one code each, `ay` for bytes, no nesting), so the common small messages
    // skip building it.
    var flatLength = 0
    var isFlat = true
    for value in body {
      try value.validate()
      switch value {
      case .array, .dictionary, .structure, .variant: isFlat = false
      case .bytes: flatLength += 2
      default: flatLength += 1
      }
    }
    if !isFlat || flatLength > Signature.maximumLength,
      let rule = Signature.violation(in: signature.rawValue)
    {
      throw DBusError(.invalidSignature, "the body's signature: \(rule)")
    }
  }
}
