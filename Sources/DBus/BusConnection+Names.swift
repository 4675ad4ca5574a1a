/// Options for ``BusConnection/requestName(_:flags:)``.
public struct RequestNameFlags: OptionSet, Hashable, Sendable {
  public let rawValue: UInt32
  public init(rawValue: UInt32) { self.rawValue = rawValue }

  /// Let another connection that asks with ``replaceExisting`` take the name.
  ///
  /// The corresponding libdbus constant is `DBUS_NAME_FLAG_ALLOW_REPLACEMENT`.
  public static let allowReplacement = RequestNameFlags(rawValue: 1)
  /// Take the name from its owner if the owner allowed replacement.
  ///
  /// The corresponding libdbus constant is `DBUS_NAME_FLAG_REPLACE_EXISTING`.
  public static let replaceExisting = RequestNameFlags(rawValue: 2)
  /// Fail instead of waiting in the queue when the name is taken.
  ///
  /// The corresponding libdbus constant is `DBUS_NAME_FLAG_DO_NOT_QUEUE`.
  public static let doNotQueue = RequestNameFlags(rawValue: 4)
}

/// The bus's answer to `RequestName`.
public enum RequestNameReply: UInt32, Sendable {
  /// This connection now owns the name.
  case primaryOwner = 1
  /// Another connection owns it; this one waits in the queue.
  case inQueue = 2
  /// Another connection owns it and ``RequestNameFlags/doNotQueue`` was given.
  case exists = 3
  /// This connection already owned the name.
  case alreadyOwner = 4
}

/// What the bus knows about the process behind a connection.
public struct PeerCredentials: Hashable, Sendable {
  /// The user id, when the bus knows it.
  public var userID: UInt32?
  /// The process id, when the bus knows it.
  public var processID: UInt32?
  /// The supplementary group ids (`UnixGroupIDs`), when the bus reports them.
  public var groupIDs: [UInt32]?
}

extension BusConnection {
  /// Asks the bus for a well-known name.
  ///
  /// Owned names are requested again after a reconnection.
  ///
  /// - Returns: The bus's answer.
  /// - Throws: ``DBusError`` when the bus refuses (for example ``DBusError/Name/accessDenied``).
  public func requestName(_ name: BusName, flags: RequestNameFlags = [.doNotQueue])
    async throws(DBusError) -> RequestNameReply
  {
    let reply = try await call(
      busMethod("RequestName", [.string(name.rawValue), .uint32(flags.rawValue)]))
    guard case .uint32(let code)? = reply.body.first, let result = RequestNameReply(rawValue: code)
    else { throw DBusError(.failed, "the bus gave an unexpected answer to RequestName") }
    if result == .primaryOwner || result == .alreadyOwner || result == .inQueue {
      ownedNames[name] = flags
    }
    return result
  }

  /// Gives up a well-known name.
  public func releaseName(_ name: BusName) async throws(DBusError) {
    ownedNames[name] = nil
    _ = try await call(busMethod("ReleaseName", [.string(name.rawValue)]))
  }

  /// The unique name of the connection that owns `name`.
  ///
  /// - Throws: ``DBusError/Name/nameHasNoOwner`` when nobody owns it.
  public func owner(of name: BusName) async throws(DBusError) -> BusName {
    let reply = try await call(busMethod("GetNameOwner", [.string(name.rawValue)]))
    guard let owner = reply.body.first?.stringValue else {
      throw DBusError(.failed, "the bus gave an unexpected answer to GetNameOwner")
    }
    return BusName(unchecked: owner)
  }

  /// The user id of the process behind the connection `name`, as the bus saw it when
  /// that process connected; a message cannot forge it.
  ///
  /// The corresponding bus method is `GetConnectionUnixUser`.
  public func unixUser(of name: BusName) async throws(DBusError) -> UInt32 {
    let reply = try await call(busMethod("GetConnectionUnixUser", [.string(name.rawValue)]))
    guard case .uint32(let uid)? = reply.body.first else {
      throw DBusError(.failed, "the bus gave an unexpected answer to GetConnectionUnixUser")
    }
    return uid
  }

  /// The user and process ids, and the group ids when the bus reports them, behind the
  /// connection `name`.
  ///
  /// The corresponding bus method is `GetConnectionCredentials`.
  public func credentials(of name: BusName) async throws(DBusError) -> PeerCredentials {
    let reply = try await call(busMethod("GetConnectionCredentials", [.string(name.rawValue)]))
    guard let entries = reply.body.first?.stringDictionary else {
      throw DBusError(.failed, "the bus gave an unexpected answer to GetConnectionCredentials")
    }
    func number(_ key: String) -> UInt32? {
      entries[key]?.uint64Value.flatMap { UInt32(exactly: $0) }
    }
    var groups: [UInt32]?
    if case .array(_, let values)? = entries["UnixGroupIDs"] {
      groups = values.compactMap { $0.uint64Value.flatMap { UInt32(exactly: $0) } }
    }
    return PeerCredentials(
      userID: number("UnixUserID"), processID: number("ProcessID"), groupIDs: groups)
  }

  /// The bus's globally unique id.
  public func busID() async throws(DBusError) -> String {
    let reply = try await call(busMethod("GetId"))
    return reply.body.first?.stringValue ?? ""
  }
}
