import DBus
import Dispatch

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Every registration of a ``NotifyCenter``, kept under the center's lock.
///
/// Methods here never block and never call out: they return ``Action``s that the center
/// performs after releasing the lock, except pipe writes, which are non-blocking and
/// done under the lock so a concurrent cancel cannot close the pipe mid-write.
struct Registry {
  /// Work to do outside the lock.
  enum Action {
    /// Queue a run of the handler: the registration had none queued.
    case dispatch(QueuedHandler)
    /// Boxed: an event is large, and the other actions, copied for every delivery,
    /// stay small.
    indirect case yield(AsyncStream<NotifyEvent>.Continuation, NotifyEvent)
    case signal(CInt)
    case immediate(@Sendable (NotifyToken) -> Void, NotifyToken)
    case connectionThread(ConnectionThreadHandler, NotifyToken)
  }

  /// The actions of one post, in order: most posts reach one registration, so the first
  /// is kept inline and a delivery allocates nothing here.
  struct Actions: Sequence {
    private var first: Action?
    private var others: [Action] = []

    init() {}

    var isEmpty: Bool { first == nil }

    mutating func append(_ action: Action) {
      if first == nil {
        first = action
      } else {
        others.append(action)
      }
    }

    mutating func append(contentsOf actions: Actions) {
      for action in actions { append(action) }
    }

    func makeIterator() -> Iterator { Iterator(first: first, others: others.makeIterator()) }

    struct Iterator: IteratorProtocol {
      fileprivate var first: Action?
      fileprivate var others: IndexingIterator<[Action]>

      mutating func next() -> Action? {
        if let action = first {
          first = nil
          return action
        }
        return others.next()
      }
    }
  }

  /// How a subject is subscribed on the bus.
  enum BusSubscription {
    /// A name: its interface is in the center's rule set (``NotifyCenter/postRules``).
    case name
    /// A namespace: a subscription of its own.
    case rule(SignalSubscription)
  }

  /// A name or namespace and its registrations.
  struct SubjectState {
    var tokens = TokenList()
    var subscription: BusSubscription?
  }

  /// A pipe made by ``NotifyCenter/registerFileDescriptor(_:reusing:)``.
  struct Pipe {
    var write: CInt
    var users: Int
  }

  var registrations: [NotifyToken: Registration] = [:]
  var subjects: [Subject: SubjectState] = [:]
  /// The subscriptions under way, which a subject's first registrations wait for: apart
  /// from ``subjects``, whose entries stay small.
  var pendingSubscriptions: [Subject: Task<Result<Void, DBusError>, Never>] = [:]
  var pipes: [CInt: Pipe] = [:]
  /// How many registrations each stream of ``NotifyCenter/events(for:inNamespaces:bufferSize:)``
  /// serves: it finishes with the last.
  var streamUsers: [AsyncStream<NotifyEvent>.Continuation: Int] = [:]
  var malformedSignals = 0
  var deliveries = 0
  var sequenceGaps = 0
  /// The last count of a name's posts seen from each poster, to see gaps.
  var nameSequences = NameSequences()
  /// The state of `self.` names.
  var localState: [NotifyName: UInt64] = [:]
  /// The last state this process set for each name and when (nanoseconds since the
  /// epoch), to restore after a `notifyd` restart.
  var lastSetState: [NotifyName: (value: UInt64, setTime: UInt64)] = [:]
  /// Whether the center watches `notifyd`'s name to restore ``lastSetState``.
  var watchesService = false

  mutating func insert(_ registration: Registration) {
    registrations[registration.token] = registration
    subjects[registration.subject, default: SubjectState()].tokens.append(registration.token)
    if case .stream(let continuation) = registration.delivery {
      streamUsers[continuation, default: 0] += 1
    }
  }

  /// The subscription task to wait for before `subject`'s first registration returns; starts it
  /// with `start` when there is none yet.
  ///
  /// `nil` when nothing needs waiting.
  mutating func subscription(
    for subject: Subject, isLocal: Bool,
    start: () -> Task<Result<Void, DBusError>, Never>
  ) -> Task<Result<Void, DBusError>, Never>? {
    guard !isLocal, let state = subjects[subject], state.subscription == nil else { return nil }
    if let pending = pendingSubscriptions[subject] { return pending }
    let task = start()
    pendingSubscriptions[subject] = task
    return task
  }

  /// Records a subscription.
  ///
  /// Returns `true` when every registration went away while it was being made, so the caller should
  /// cancel it.
  mutating func subscribed(_ subject: Subject, _ subscription: BusSubscription) -> Bool {
    pendingSubscriptions[subject] = nil
    guard subjects[subject]?.tokens.isEmpty == false else {
      subjects[subject] = nil
      return true
    }
    subjects[subject]?.subscription = subscription
    return false
  }

  mutating func subscriptionFailed(_ subject: Subject) {
    pendingSubscriptions[subject] = nil
  }

  /// A removed registration, and what the center must end outside the lock.
  struct Removal {
    var registration: Registration
    /// The bus subscription to cancel: the registration was the last of its subject.
    var unsubscribe: BusSubscription?
    /// The stream to finish: the registration was the last it served.
    var finishedStream: AsyncStream<NotifyEvent>.Continuation?
  }

  /// Removes a registration, in O(1) amortized however many registrations its subject or
  /// its pipe has.
  ///
  /// - Returns: It and what to end with it, or `nil` when `token` is not live.
  mutating func remove(_ token: NotifyToken) -> Removal? {
    guard let registration = registrations.removeValue(forKey: token) else { return nil }
    var removal = Removal(registration: registration)
    switch registration.delivery {
    case .fileDescriptor(_, let read):
      releasePipe(read)
    case .stream(let continuation):
      if let users = streamUsers[continuation], users > 1 {
        streamUsers[continuation] = users - 1
      } else {
        streamUsers[continuation] = nil
        removal.finishedStream = continuation
      }
    case .dispatch(let handler):
      // A run already queued does not start (it checks this).
      handler.cancel()
    case .connectionThread(let handler):
      handler.cancel()
    case .check, .signal, .immediate:
      break
    }
    // In place: a copy of the subject's state would copy its token list.
    guard let index = subjects.index(forKey: registration.subject) else { return removal }
    if subjects.values[index].tokens.remove() {
      let live = subjects.values[index].tokens.filter { registrations[$0] != nil }
      subjects.values[index].tokens = TokenList(live)
    }
    if subjects.values[index].tokens.isEmpty && pendingSubscriptions[registration.subject] == nil {
      removal.unsubscribe = subjects.values[index].subscription
      subjects.remove(at: index)
    }
    return removal
  }

  mutating func releasePipe(_ read: CInt) {
    guard var pipe = pipes[read] else { return }
    pipe.users -= 1
    if pipe.users > 0 {
      pipes[read] = pipe
      return
    }
    pipes[read] = nil
    close(pipe.write)
    close(read)
  }

  /// Records a post to every registration of `subject`.
  mutating func post(
    _ name: NotifyName, to subject: Subject, sender: String?, sequence: UInt64?,
    nameSequence: UInt64? = nil, resynchronization: Bool
  ) -> Actions {
    var actions = Actions()
    guard let tokens = subjects[subject]?.tokens else { return actions }
    for token in tokens {
      guard let index = registrations.index(forKey: token) else { continue }
      // The registration's counter starts at 1 (Darwin's, so a first check is true); the
      // event counts posts, so its first is 1.
      record(at: index, into: &actions) { postCount in
        NotifyEvent(
          token: token, name: name, postCount: postCount - 1, sender: sender,
          sequence: sequence, nameSequence: nameSequence, isResynchronization: resynchronization)
      }
    }
    return actions
  }

  /// Raises the post count of the registration at `index` and delivers the post to it, or
  /// keeps it for the last resume when the registration is suspended; `event` (given the
  /// raised count) is made only when a stream or a suspension needs it.
  mutating func record(
    at index: Dictionary<NotifyToken, Registration>.Index, into actions: inout Actions,
    event: (_ postCount: UInt64) -> NotifyEvent
  ) {
    if Self.record(&registrations.values[index], into: &actions, event: event) { deliveries += 1 }
  }

  /// ``record(at:into:event:)`` on the registration in place; whether the post counts as
  /// a delivery.
  ///
  /// In place through `values`' modify accessor: its getter copies the whole
  /// registration, a retain and release of all it holds.
  private static func record(
    _ registration: inout Registration, into actions: inout Actions,
    event: (_ postCount: UInt64) -> NotifyEvent
  ) -> Bool {
    registration.postCount += 1
    let postCount = registration.postCount
    if registration.suspendCount > 0 {
      registration.deferred = DeferredPost(event(postCount))
      return false
    }
    return deliver(
      registration.delivery, token: registration.token, event: { event(postCount) },
      into: &actions)
  }

  /// `body` on the registration of `token`, in place (see ``record(at:into:event:)``);
  /// `nil` when the token is not live.
  mutating func updateRegistration<Result>(
    _ token: NotifyToken, _ body: (inout Registration) -> Result
  ) -> Result? {
    guard let index = registrations.index(forKey: token) else { return nil }
    return body(&registrations.values[index])
  }

  /// Records a possible missed post for every registration that listens on the bus.
  mutating func resynchronizeAll() -> Actions {
    var actions = Actions()
    for (subject, _) in subjects {
      let name: NotifyName?
      switch subject {
      case .name(let value): name = value.isProcessLocal ? nil : value
      case .namespace(let prefix): name = try? NotifyName(prefix)
      }
      guard let name else { continue }
      actions.append(
        contentsOf: post(name, to: subject, sender: nil, sequence: nil, resynchronization: true))
    }
    return actions
  }

  /// Delivers to a registration that is not suspended: whether it counts as a delivery.
  ///
  /// Static, so that the caller can pass a registration's delivery in place: a mutating
  /// method would need a copy of it (it could change the registry meanwhile), a retain
  /// and release per post.
  static func deliver(
    _ delivery: Delivery, token: NotifyToken, event: () -> NotifyEvent,
    into actions: inout Actions
  ) -> Bool {
    switch delivery {
    case .dispatch(let handler):
      // Posts coalesce into a run that is queued and not started.
      guard handler.schedule() else { return false }
      actions.append(.dispatch(handler))
    case .check:
      return false
    case .fileDescriptor(let write, _):
      var bigEndian = UInt32(bitPattern: token.rawValue).bigEndian
      _ = Glibc.write(write, &bigEndian, 4)
    case .signal(let number):
      actions.append(.signal(number))
    case .stream(let continuation):
      actions.append(.yield(continuation, event()))
    case .immediate(let handler):
      actions.append(.immediate(handler, token))
    case .connectionThread(let handler):
      actions.append(.connectionThread(handler, token))
    }
    return true
  }

  mutating func resume(_ token: NotifyToken) throws(NotifyError) -> Actions {
    guard var registration = registrations[token] else { throw NotifyCenter.invalid(token) }
    var actions = Actions()
    // Darwin returns OK for a token that is not suspended, and so does nothing here.
    guard registration.suspendCount > 0 else { return actions }
    registration.suspendCount -= 1
    let deferred = registration.suspendCount == 0 ? registration.deferred : nil
    if deferred != nil { registration.deferred = nil }
    registrations[token] = registration
    if let deferred,
      Self.deliver(registration.delivery, token: token, event: { deferred.event }, into: &actions)
    {
      deliveries += 1
    }
    return actions
  }
}

/// The last count of a name's posts seen from each poster: what shows a gap, posts the
/// bus dropped on their way.
///
/// A receiver usually sees many posts in a row from one poster of one name: that stream's
/// count is kept apart from the table and compared by its bytes, so such a post costs a
/// comparison of two short strings, not the hashing of both for a table lookup. It goes
/// into the table when a post of another stream comes.
struct NameSequences {
  /// At most ``maximumTracked`` entries (the recent stream's included).
  private var table: [PosterAndName: UInt64] = [:]
  /// The stream of the last post, with its count, not in ``table``.
  private var recent: (key: PosterAndName, count: UInt64)?
  static let maximumTracked = 4096

  struct PosterAndName: Hashable {
    var sender: String
    var name: NotifyName
  }

  /// How many streams are tracked.
  var count: Int { table.count + (recent == nil ? 0 : 1) }

  /// Records a poster's count of its posts of `name`: whether it shows posts missing
  /// since the last count seen from that poster.
  ///
  /// The first count seen from a poster is a start, as is a count that does not go up
  /// (the poster started counting over, or a second subscription sees the same signal).
  /// When the table is full it starts over, which can miss a gap but never invents one.
  mutating func isGap(from sender: String, name: NotifyName, count: UInt64) -> Bool {
    let last: UInt64?
    if let recent, NotifyWire.hasSameBytes(recent.key.sender, sender),
      NotifyWire.hasSameBytes(recent.key.name.rawValue, name.rawValue)
    {
      last = recent.count
      self.recent?.count = count
    } else {
      if let recent { table[recent.key] = recent.count }
      let key = PosterAndName(sender: sender, name: name)
      last = table.removeValue(forKey: key)
      if last == nil && table.count >= Self.maximumTracked - 1 { table.removeAll() }
      recent = (key, count)
    }
    guard let last else { return false }
    return count > last && count - last > 1
  }

  /// Forgets every count (a new bus hands out the old unique names again).
  mutating func removeAll() {
    table.removeAll()
    recent = nil
  }
}
