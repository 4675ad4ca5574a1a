import DBus
import Dispatch
import Notify
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The process's notify state behind the C functions of `notify.h`: the ``NotifyCenter``s
/// that do the work, connected on first use to the automatic bus (`NOTIFYBUS_BUS_ADDRESS`,
/// the session bus, else the embedded bus), and the few facts about tokens the C interface
/// needs beyond them.
///
/// Posts go out on a connection of their own, apart from the one that registrations and
/// state use: a thread posting at full speed then never waits for libdbus's lock on the
/// connection whose thread is reading that process's deliveries (measured with one
/// connection: 2.6 futex calls per post, posts/s as low as 0.57x libdbus's). Each is
/// made when first needed, the second to the address the first one reached; when that
/// fails (the bus is lost), the first one takes both roles.
///
/// Every function may be called from any thread. The functions that must wait (the first
/// connection, a registration, state) block the calling thread until a task on the Swift
/// concurrency pool has done the work; Swift code should use the Notify module instead.
final class CLibrary: Sendable {
  static let shared = CLibrary()

  /// What a center is used for.
  enum Role {
    /// Registrations, their tokens, state and the private interface.
    case registering
    /// `notify_post`.
    case posting
  }

  private struct Centers {
    var registering: NotifyCenter?
    var posting: NotifyCenter?

    subscript(role: Role) -> NotifyCenter? {
      get { role == .registering ? registering : posting }
      set {
        if role == .registering { registering = newValue } else { posting = newValue }
      }
    }
  }

  private let centers = Mutex(Centers())
  /// How many posts this process made on its posting connection, counted once each is
  /// queued there.
  private let postsMade = Atomic<UInt64>(0)
  /// How many of those posts an ordering fence (``letPostsThrough()``) has seen routed: the
  /// count a round trip that ended had read before it went out.
  private let postsRouted = Atomic<UInt64>(0)
  /// The fence most recently sent, while it is under way: a call whose posts it covers
  /// waits for its answer instead of making a round trip of its own.
  private let latestFence = Mutex<Fence?>(nil)
  /// How many round trips ``letPostsThrough()`` made, and how many calls waited for one
  /// another call had made, for `notify_dump_status`.
  private let fencesSent = Atomic<UInt64>(0)
  private let fencesJoined = Atomic<UInt64>(0)
  /// Serializes connection attempts, so concurrent first calls make one connection.
  private let connecting = Mutex<Void>(())
  /// Tokens made by `notify_register_plain`, which `notify_peek` refuses as Darwin does.
  let plainTokens = Mutex<Set<Int32>>([])
  /// The forwarders of live dispatch registrations, which `notify_cancel` ends.
  let dispatchHandlers = Mutex<[Int32: DispatchHandler]>([:])

  /// Lets `notify_cancel` end `handler`, the forwarder of the dispatch registration
  /// `token`; when the token was cancelled already (by its block, before registering
  /// returned), ends it now.
  func adopt(_ handler: DispatchHandler, token: NotifyToken, center: NotifyCenter) {
    dispatchHandlers.withLock { handlers in
      if center.isValid(token) {
        handlers[token.rawValue] = handler
        handler.markRegistered()
      } else {
        handler.cancel()
      }
    }
  }

  /// Ends the forwarder of a dispatch registration once its token is cancelled.
  func cancelDispatch(_ token: Int32) {
    dispatchHandlers.withLock { $0.removeValue(forKey: token) }?.cancel()
  }

  /// The center for `role`, connecting when there is none yet.
  ///
  /// - Returns: The center, or the status to return: `NOTIFY_STATUS_OPT_DISABLE` when
  ///   disabled or in a `fork()` child of a process that used notify,
  ///   `NOTIFY_STATUS_SERVER_NOT_FOUND` when no bus answers (the next call tries again).
  func center(_ role: Role = .registering) -> Result<NotifyCenter, CStatus> {
    if NotifyProcess.isDisabled { return .failure(.optionDisabled) }
    let (existing, inherited) = centers.withLock { centers in
      (centers[role], (centers.registering ?? centers.posting)?.isInherited == true)
    }
    // A fork() child of a process that used notify is disabled, whatever it calls.
    if inherited { return .failure(.optionDisabled) }
    if let existing { return .success(existing) }
    return connecting.withLock { _ -> Result<NotifyCenter, CStatus> in
      let (existing, first) = centers.withLock { ($0[role], $0.registering ?? $0.posting) }
      if let existing { return .success(existing) }
      switch waitFor({ () async throws(NotifyError) -> NotifyCenter in
        // The second center goes where the first one went.
        if let first, let address = await first.connection.address {
          return try await NotifyCenter.connect(to: .address(address), mediated: first.isMediated)
        }
        return try await NotifyCenter.connect()
      }) {
      case .success(let center):
        centers.withLock { $0[role] = center }
        return .success(center)
      case .failure(let error):
        // With the bus lost, the first center (reconnecting) serves both roles from now
        // on, so that what is sent meanwhile keeps one connection's order.
        guard let first else { return .failure(CStatus(error)) }
        centers.withLock { $0[role] = first }
        return .success(first)
      }
    }
  }

  /// Notes a post on the posting connection, which the next call that waits lets through first.
  func posted() {
    postsMade.add(1, ordering: .releasing)
  }

  /// Waits until the bus has routed every post this process made on its posting connection
  /// before, if it has one apart from the registering one.
  ///
  /// A call that waits (a registration, state, the status dump) goes out on the other
  /// connection; without this, it could reach the bus or notifyd ahead of an earlier post
  /// still on its way, which one connection, and Darwin's one server port, never allow:
  /// `notify_post(n)` then `notify_register_dispatch(n, ...)` would run the new handler for
  /// the earlier post, and `notify_post(n)`, `notify_get_state(t)`, `notify_check(t)` could
  /// find `t` unchanged. Once the bus answers a round trip on the posting connection, every
  /// earlier post has been routed, and the same process's receiving connection gets its
  /// signal before the answer to anything asked afterwards. Costs nothing when every post
  /// was seen routed already.
  ///
  /// Posts are counted, not flagged: a round trip lets through the posts counted before it
  /// went out, and no others. A call waits for a round trip under way when that one covers
  /// every post it must let through (threads that post and then register at once share
  /// one), and otherwise makes its own.
  func letPostsThrough() async {
    let made = postsMade.load(ordering: .acquiring)
    guard postsRouted.load(ordering: .relaxed) < made else { return }
    let (posting, registering) = centers.withLock { ($0.posting, $0.registering) }
    guard let posting, posting !== registering else { return }
    if latestFence.withLock({ $0?.covers(made) == true }) {
      let joined = await withCheckedContinuation { continuation in
        latestFence.withLock { latest in
          guard let latest, latest.covers(made) else {
            return continuation.resume(returning: false)
          }
          latest.waiters.append(continuation)
        }
      }
      if joined {
        fencesJoined.add(1, ordering: .relaxed)
        return
      }
    }
    // Counted before the round trip is queued: every post counted here was queued before it.
    let fence = latestFence.withLock { latest in
      let fence = Fence(posts: postsMade.load(ordering: .acquiring))
      latest = fence
      return fence
    }
    fencesSent.add(1, ordering: .relaxed)
    // A bus that is gone fails the round trip; the call that follows reports it, and the
    // next call makes the round trip again.
    let routed = (try? await posting.synchronize()) != nil
    if routed { postsRouted.max(fence.posts, ordering: .relaxed) }
    let waiters = latestFence.withLock { latest in
      if latest === fence { latest = nil }
      fence.isAnswered = true
      return fence.waiters
    }
    // A round trip that failed lets no one through: each waiter makes its own.
    for waiter in waiters { waiter.resume(returning: routed) }
  }

  /// The line of `notify_dump_status` on the posting connection's posts and the round
  /// trips that kept calls that wait behind them.
  var orderingReport: String {
    "c library: posts \(postsMade.load(ordering: .relaxed)), round trips for order "
      + "\(fencesSent.load(ordering: .relaxed)), calls that waited for another's "
      + "\(fencesJoined.load(ordering: .relaxed))\n"
  }

  /// A round trip on the posting connection, under way, and the calls waiting for it.
  ///
  /// Its fields are only touched with ``latestFence`` held.
  private final class Fence: @unchecked Sendable {
    /// How many posts had been counted before it was queued.
    let posts: UInt64
    var waiters: [CheckedContinuation<Bool, Never>] = []
    var isAnswered = false

    init(posts: UInt64) { self.posts = posts }

    /// Whether its answer lets through the first `count` posts.
    func covers(_ count: UInt64) -> Bool { !isAnswered && posts >= count }
  }

  /// The registering center, if one was made; token functions never connect, since a
  /// token can only come from it.
  func existingCenter() -> Result<NotifyCenter, CStatus> {
    if NotifyProcess.isDisabled { return .failure(.optionDisabled) }
    let (existing, inherited) = centers.withLock { centers in
      (centers.registering, (centers.registering ?? centers.posting)?.isInherited == true)
    }
    if inherited { return .failure(.optionDisabled) }
    guard let existing else { return .failure(.invalidToken) }
    return .success(existing)
  }
}

/// Runs `body` on the Swift concurrency pool and blocks the calling thread until it ends;
/// the process's earlier posts are routed first (``CLibrary/letPostsThrough()``).
func waitFor<T: Sendable>(_ body: @escaping @Sendable () async throws(NotifyError) -> T)
  -> Result<T, NotifyError>
{
  let completion = Completion<T>()
  Task.detached {
    let result: Result<T, NotifyError>
    do throws(NotifyError) {
      await CLibrary.shared.letPostsThrough()
      result = .success(try await body())
    } catch {
      result = .failure(error)
    }
    completion.finish(result)
  }
  return completion.wait()
}

/// The result of ``waitFor(_:)``'s task, handed to the waiting thread.
private final class Completion<T: Sendable>: Sendable {
  private let value = Mutex<Result<T, NotifyError>?>(nil)
  private let done = DispatchSemaphore(value: 0)

  func finish(_ result: Result<T, NotifyError>) {
    value.withLock { $0 = result }
    done.signal()
  }

  func wait() -> Result<T, NotifyError> {
    done.wait()
    return value.withLock { $0! }
  }
}

/// A `NOTIFY_STATUS_*` value.
struct CStatus: Error, Equatable {
  let rawValue: UInt32

  init(_ status: NotifyStatus) { rawValue = status.rawValue }
  init(_ error: NotifyError) { rawValue = error.status.rawValue }

  static let ok = CStatus(.ok)
  static let invalidName = CStatus(.invalidName)
  static let invalidToken = CStatus(.invalidToken)
  static let invalidPort = CStatus(.invalidPort)
  static let invalidFile = CStatus(.invalidFile)
  static let invalidRequest = CStatus(.invalidRequest)
  static let optionDisabled = CStatus(.optionDisabled)
  static let nullInput = CStatus(.nullInput)
  static let failed = CStatus(.failed)
}

extension Result where Failure == CStatus {
  /// The status of a finished call.
  var status: UInt32 {
    switch self {
    case .success: CStatus.ok.rawValue
    case .failure(let status): status.rawValue
    }
  }
}

/// Reads a C name, at most 512 bytes of it.
///
/// NULL, longer than 511 bytes, not UTF-8 or otherwise invalid names give
/// `NOTIFY_STATUS_INVALID_NAME`.
func notifyName(_ pointer: UnsafePointer<CChar>?) -> Result<NotifyName, CStatus> {
  guard let pointer else { return .failure(.invalidName) }
  let length = strnlen(pointer, NotifyName.maximumLength + 1)
  guard length <= NotifyName.maximumLength else { return .failure(.invalidName) }
  let bytes = UnsafeRawBufferPointer(start: UnsafeRawPointer(pointer), count: length)
  // Never waits for the cache: a thread finding it busy, or a fork() child whose parent
  // had another thread inside it at the fork (the lock then stays held for good), reads
  // the name the long way instead of blocking.
  if let known = recentNames.withLockIfAvailable({ $0.name(matching: bytes) }) ?? nil {
    return .success(known)
  }
  guard let text = String(validating: bytes, as: UTF8.self), let name = try? NotifyName(text)
  else { return .failure(.invalidName) }
  _ = recentNames.withLockIfAvailable { $0.remember(name) }
  return .success(name)
}

/// The names the C functions were given last.
private let recentNames = Mutex(RecentNames())

/// The last few valid names read from C, so that a name given again (a program posts the
/// same few names over and over) costs one byte comparison instead of a UTF-8 validation,
/// a new string and the name's checks, and every post of it shares one string.
struct RecentNames: ~Copyable {
  static let capacity = 8
  private var names: [NotifyName] = []
  /// Where the next new name goes once full: the oldest one.
  private var next = 0

  /// The remembered name whose UTF-8 is `bytes`.
  func name(matching bytes: UnsafeRawBufferPointer) -> NotifyName? {
    for name in names {
      let equal = name.rawValue.utf8.withContiguousStorageIfAvailable { stored in
        stored.count == bytes.count
          && (bytes.isEmpty || memcmp(stored.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
      }
      if equal == true { return name }
    }
    return nil
  }

  mutating func remember(_ name: NotifyName) {
    if names.count < Self.capacity {
      names.append(name)
    } else {
      names[next] = name
      next = (next + 1) % Self.capacity
    }
  }
}

/// Stores a new token through `out`, or `NOTIFY_TOKEN_INVALID` when registration failed.
func store(_ result: Result<NotifyToken, CStatus>, in out: UnsafeMutablePointer<Int32>) -> UInt32 {
  switch result {
  case .success(let token):
    out.pointee = token.rawValue
    return CStatus.ok.rawValue
  case .failure(let status):
    out.pointee = -1
    return status.rawValue
  }
}
