import DBus
import NotifyCore
import NotifyServerFiles
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// One checked method call.
enum ServiceRequest {
  case setState(NotifyName, UInt64)
  case getState(NotifyName)
  case post(NotifyName)
  case restoreState(NotifyName, UInt64, setTime: UInt64)
  case listNames
  case describeNames
  case statistics

  /// Checks a call's member and arguments.
  ///
  /// - Throws: ``DBusError`` `UnknownMethod` for another member, `InvalidArgs` naming the
  ///   expected signature or the name's problem.
  init(_ call: Message) throws(DBusError) {
    let member = call.member?.rawValue ?? ""
    func expect(_ signature: StaticString, _ spelled: String) throws(DBusError) {
      guard call.hasSignature(signature) else {
        throw DBusError(
          .invalidArgs,
          "\(member) takes (\(spelled)), signature '\(signature)', "
            + "not signature '\(call.signature.rawValue)'")
      }
    }
    func name() throws(DBusError) -> NotifyName {
      guard case .string(let text)? = call.body.first else {
        throw DBusError(.invalidArgs, "\(member): the first argument must be the name")
      }
      let name: NotifyName
      do {
        name = try NotifyName(text)
      } catch {
        throw DBusError(.invalidArgs, "\(member): \(error.message)")
      }
      guard !name.isProcessLocal else {
        throw DBusError(
          .invalidArgs,
          "\(member): '\(text)' is a self. name, private to a process; notifyd does not keep it")
      }
      return name
    }
    func number(_ index: Int) -> UInt64 { call.body[index].uint64Value ?? 0 }
    switch member {
    case "SetState":
      try expect("st", "s name, t state")
      self = .setState(try name(), number(1))
    case "GetState":
      try expect("s", "s name")
      self = .getState(try name())
    case "Post":
      try expect("s", "s name")
      self = .post(try name())
    case "RestoreState":
      try expect("stt", "s name, t state, t set_time_ns")
      self = .restoreState(try name(), number(1), setTime: number(2))
    case "ListNames":
      try expect("", "no arguments")
      self = .listNames
    case "DescribeNames":
      try expect("", "no arguments")
      self = .describeNames
    case "GetStatistics":
      try expect("", "no arguments")
      self = .statistics
    default:
      throw DBusError(
        .unknownMethod,
        "\(NotifydInterface.interface) has no method '\(member)'; see notifyd(8)")
    }
  }

  /// The write operation the call needs access for, and the name; `nil` for reads.
  var write: (AccessPolicy.Operation, NotifyName)? {
    switch self {
    case .setState(let name, _), .restoreState(let name, _, _): (.setState, name)
    case .post(let name): (.post, name)
    case .getState, .listNames, .describeNames, .statistics: nil
    }
  }
}

extension NotifyServer {
  /// Answers a call at once, on the connection's thread as it is dispatched, when nothing
  /// of its caller is queued and nothing needs looking up (every `GetState`, and every
  /// other call once the caller's identity is known or not needed); `nil` leaves it to
  /// ``handle(_:)``.
  ///
  /// `ListNames` and `DescribeNames` are answered here too: their sort and reply, over at
  /// most `--max-names` names, delay the connection's other messages as long as they take
  /// (tens of milliseconds for 100,000 names), as they did in the task before, which ran on
  /// the same thread; what answering in place saves is the task's hop.
  func answerAtOnce(_ call: Message) throws(DBusError) -> [DBusValue]? {
    let request = try checkedRequest(call)
    guard case .ready(let caller) = lookUpCaller(for: request, call) else { return nil }
    return try perform(request, caller: caller)
  }

  /// Answers one method call.
  func handle(_ call: Message) async throws(DBusError) -> [DBusValue] {
    let request = try checkedRequest(call)
    let needsIdentity: Bool
    switch lookUpCaller(for: request, call) {
    case .ready(let caller): return try perform(request, caller: caller)
    case .wait(let needs): needsIdentity = needs
    }
    let sender = call.sender?.rawValue ?? ""
    await enterQueue(sender)
    defer { leaveQueue(sender) }
    let caller = needsIdentity ? try await identify(sender) : nil
    return try perform(request, caller: caller)
  }

  /// The call's request, or the error its reply is, counted.
  private func checkedRequest(_ call: Message) throws(DBusError) -> ServiceRequest {
    do {
      return try ServiceRequest(call)
    } catch {
      state.withLock { $0.statistics.invalidCalls += 1 }
      throw error
    }
  }

  /// What performing a request needs of its caller.
  private enum CallerLookup {
    /// Nothing to wait for: perform it for this caller (`nil` when its identity does not
    /// matter).
    case ready(ServerState.Caller?)
    /// Queue behind the caller's earlier calls, then look its identity up when
    /// `needsIdentity`.
    case wait(needsIdentity: Bool)
  }

  /// Whether `request` can be performed without a wait: its caller has nothing queued, and
  /// its identity does not matter or is cached.
  private func lookUpCaller(for request: ServiceRequest, _ call: Message) -> CallerLookup {
    let sender = call.sender?.rawValue ?? ""
    let needsCaller = request.write.map { needsIdentity($0.1) } ?? false
    return state.withLock { state -> CallerLookup in
      guard state.queues[sender] == nil else { return .wait(needsIdentity: needsCaller) }
      if !needsCaller { return .ready(nil) }
      return state.callers[sender].map { .ready($0) } ?? .wait(needsIdentity: true)
    }
  }

  /// Whether any rule applies to `name`, so that the caller's identity matters.
  func needsIdentity(_ name: NotifyName) -> Bool {
    AccessPolicy.reservedUser(of: name.rawValue) != nil
      || accessPolicy.rule(for: name.rawValue) != nil
  }

  private func perform(_ request: ServiceRequest, caller: ServerState.Caller?)
    throws(DBusError) -> [DBusValue]
  {
    if let (operation, name) = request.write, operation == .setState,
      name == NotifyWire.serverVersionName
    {
      state.withLock { $0.statistics.denied += 1 }
      throw DBusError(
        .accessDenied, "'\(name)' reports notifyd's version and pid; only notifyd sets it")
    }
    if case .getState(let name) = request, name == NotifyWire.serverVersionName {
      return [.uint64(NotifyWire.serverVersionState(processID: UInt32(bitPattern: getpid())))]
    }
    if let (operation, name) = request.write, let caller {
      if let reason = accessPolicy.check(
        operation, name.rawValue, user: caller.user, groups: caller.groups)
      {
        state.withLock { $0.statistics.denied += 1 }
        throw DBusError(.accessDenied, reason)
      }
    }
    switch request {
    case .setState(let name, let value):
      let time = Self.realtimeNanoseconds()
      let stored = state.withLock { state in
        state.statistics.stateSets += 1
        return state.table.setState(value, of: name, at: time)
      }
      guard stored else { throw full(name) }
      scheduleSave()
      bridgeState(name, value, setTime: time)
      return []
    case .restoreState(let name, let value, let time):
      let applied = state.withLock { state in
        state.statistics.restores += 1
        return state.table.restoreState(value, of: name, setAt: time)
      }
      guard let applied else { throw full(name) }
      if applied {
        scheduleSave()
        bridgeState(name, value, setTime: time)
      }
      return [.boolean(applied)]
    case .getState(let name):
      return [
        .uint64(
          state.withLock { state in
            state.statistics.stateGets += 1
            return state.table.state(of: name)
          })
      ]
    case .post(let name):
      state.withLock { $0.statistics.mediatedPosts += 1 }
      try sendPost(name, onlyIfConnected: false)
      bridgeMediatedPost(name)
      return []
    case .listNames:
      let rows = state.withLock { state in
        state.table.sortedEntries.map {
          DBusValue.structure([
            .string($0.key.rawValue), .uint64($0.value.state), .uint64($0.value.postCount),
          ])
        }
      }
      return [.array(elementType: "(stt)", rows)]
    case .describeNames:
      let rows = state.withLock { state in
        state.table.sortedEntries.map {
          DBusValue.structure([
            .string($0.key.rawValue), .uint64($0.value.state), .uint64($0.value.setTime),
            .uint64($0.value.postCount), .uint64($0.value.lastPostTime),
          ])
        }
      }
      return [.array(elementType: "(stttt)", rows)]
    case .statistics:
      return [statistics()]
    }
  }

  private func full(_ name: NotifyName) -> DBusError {
    DBusError(
      .limitsExceeded,
      "cannot keep the state of '\(name)': notifyd already holds \(configuration.capacity) "
        + "names with a state")
  }

  /// `GetStatistics`' dictionary (keys in `Protocol/notifyd.md`).
  func statistics() -> DBusValue {
    let entries = state.withLock { state -> [String: DBusValue] in
      var entries: [String: DBusValue] = [
        "Names": .uint32(UInt32(clamping: state.table.count)),
        "NamesWithState": .uint32(UInt32(clamping: state.table.stateCount)),
        "Capacity": .uint32(UInt32(clamping: configuration.capacity)),
        "CachedCallers": .uint32(UInt32(clamping: state.callers.count)),
        "StartTime": .uint64(state.startTime),
      ]
      for (key, value) in state.counters { entries[key] = .uint64(value) }
      return entries
    }
    var all = entries
    all["ProcessID"] = .uint32(UInt32(bitPattern: getpid()))
    all["StateFile"] = .string(configuration.store?.path ?? "")
    all["AccessRules"] = .uint32(UInt32(clamping: accessPolicy.rules.count))
    all["Bridges"] = bridgeStatistics()
    return .dictionary(all)
  }
}
