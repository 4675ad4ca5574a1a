import Dispatch

/// How a registration is told of a post.
enum Delivery {
  /// Run a handler on a queue.
  case dispatch(QueuedHandler)
  /// Nothing: the owner polls with `check`.
  case check
  /// Write the token, 4 bytes big-endian, to a pipe.
  case fileDescriptor(write: CInt, read: CInt)
  /// Send a signal to this process.
  case signal(CInt)
  /// Yield an event to a stream.
  case stream(AsyncStream<NotifyEvent>.Continuation)
  /// Call a handler where the post is recorded (``NotifyCenter/register(_:immediate:)``).
  case immediate(@Sendable (NotifyToken) -> Void)
  /// Call a handler on the connection's thread (``NotifyCenter/register(_:queue:handler:)``
  /// with no queue).
  case connectionThread(ConnectionThreadHandler)

  var typeName: String {
    switch self {
    case .dispatch, .immediate, .connectionThread: "dispatch"
    case .check: "check"
    case .fileDescriptor: "file"
    case .signal: "signal"
    case .stream: "stream"
    }
  }
}

/// What a registration watches: one name, or every name in a namespace.
enum Subject: Hashable {
  case name(NotifyName)
  case namespace(String)
}

/// One live registration.
///
/// Lives in ``NotifyCenter``'s registry, under its lock.
struct Registration {
  // Small fields first: a registry holds many, and Swift lays fields out in order.
  let token: NotifyToken
  /// Nesting depth of `suspend`.
  var suspendCount: Int32 = 0
  let subject: Subject
  let delivery: Delivery
  /// Posts that reached this registration; starts at 1 so the first check is true.
  var postCount: UInt64 = 1
  /// `postCount` at the last check; starts at 0.
  var checkedCount: UInt64 = 0
  /// A post arrived while suspended: deliver once on the last resume.
  ///
  /// Boxed, so an idle registration stays small.
  var deferred: DeferredPost?

  init(token: NotifyToken, subject: Subject, delivery: Delivery) {
    self.token = token
    self.subject = subject
    self.delivery = delivery
  }
}

/// The post a suspended registration delivers on its last resume.
final class DeferredPost: Sendable {
  let event: NotifyEvent
  init(_ event: NotifyEvent) { self.event = event }
}
