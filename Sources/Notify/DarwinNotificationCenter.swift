public import Dispatch
import Synchronization

/// The counterpart of `CFNotificationCenterGetDarwinNotifyCenter`: observers keyed by
/// (observer, name), callbacks with the name, and no payload.
///
/// ```swift
/// let center = DarwinNotificationCenter(notifications: try await NotifyCenter.connect())
/// try await center.addObserver(self, name: "group.example.saved") { name in reload() }
/// try center.post("group.example.saved", object: nil, userInfo: nil)
/// ```
///
/// As on Darwin, `object` and `userInfo` are ignored when posting, and removal is keyed
/// by (observer, name). Adding the same (observer, name) again **replaces** its callback
/// (Apple does not document this case; NotifyBus makes the pair unique). Observers are
/// identified, not retained. Callbacks run on the center's `queue`, one at a time.
public final class DarwinNotificationCenter: Sendable {
  /// The notify center underneath.
  public let notifications: NotifyCenter
  /// Where callbacks run.
  public let queue: DispatchQueue
  private let observers = Mutex<[Key: Entry]>([:])

  private struct Key: Hashable {
    let observer: ObjectIdentifier
    let name: NotifyName
  }

  private struct Entry {
    let token: NotifyToken
    let callback: Callback
  }

  /// A callback: the name posted.
  public typealias Callback = @Sendable (NotifyName) -> Void

  /// Creates a center over `notifications`, calling back on `queue` (a private serial
  /// queue by default).
  public init(
    notifications: NotifyCenter,
    queue: DispatchQueue = DispatchQueue(label: "org.notifybus.darwin-center")
  ) {
    self.notifications = notifications
    self.queue = queue
  }

  /// Calls `callback` each time `name` is posted, until removed.
  ///
  /// Adding the same (observer, name) again replaces the callback.
  public func addObserver(
    _ observer: AnyObject, name: NotifyName, callback: @escaping Callback
  ) async throws(NotifyError) {
    let key = Key(observer: ObjectIdentifier(observer), name: name)
    let token = try await notifications.register(name, queue: queue) { [weak self] token in
      guard let entry = self?.observers.withLock({ $0[key] }), entry.token == token else { return }
      entry.callback(name)
    }
    let replaced = observers.withLock { observers in
      defer { observers[key] = Entry(token: token, callback: callback) }
      return observers[key]?.token
    }
    if let replaced { try? notifications.cancel(replaced) }
  }

  /// Stops calling back `observer` for `name`.
  ///
  /// Removing a pair that is not there does nothing.
  public func removeObserver(_ observer: AnyObject, name: NotifyName) {
    let key = Key(observer: ObjectIdentifier(observer), name: name)
    if let entry = observers.withLock({ $0.removeValue(forKey: key) }) {
      try? notifications.cancel(entry.token)
    }
  }

  /// Stops calling back `observer` for every name.
  public func removeEveryObserver(_ observer: AnyObject) {
    let id = ObjectIdentifier(observer)
    let removed = observers.withLock { observers in
      let keys = observers.keys.filter { $0.observer == id }
      return keys.compactMap { observers.removeValue(forKey: $0)?.token }
    }
    for token in removed { try? notifications.cancel(token) }
  }

  /// Posts `name`.
  ///
  /// `object` and `userInfo` are ignored, as for Darwin notifications: only the name crosses
  /// process boundaries.
  public func post(
    _ name: NotifyName, object: UnsafeRawPointer? = nil, userInfo: [String: String]? = nil
  ) throws(NotifyError) {
    _ = (object, userInfo)
    try notifications.post(name)
  }
}
