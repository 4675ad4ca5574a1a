import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A bounded, persistent set of keys, for dropping items already seen, such as a URL that
/// was already imported.
///
/// The set lives in the container as `dedupe/<name>.keys`, an append-only log that every
/// process of the group shares (format in `Protocol/container.md`). Each insertion is
/// appended and fsynced under an exclusive `flock` on `dedupe/<name>.lock`, held only for
/// the insertion. The set remembers at least the newest `capacity` keys and at most twice
/// as many: when the log reaches twice the capacity it is rewritten with the newest
/// `capacity` keys.
///
/// ```swift
/// let seen = try SeenKeys(container: container, name: "imported-urls")
/// let fresh = try seen.filterNew(items) { $0.url.absoluteString }
/// ```
public final class SeenKeys: Sendable {
  /// The set's name inside the container.
  public let name: String
  /// The number of most recent keys the set is guaranteed to remember.
  public let capacity: Int
  private let lockDirectory: Directory
  private let log: Mutex<KeyLog>

  /// Opens (creating on first use) a dedupe set in a container.
  ///
  /// - Parameters:
  ///   - container: The group container.
  ///   - name: A portable name: letters, digits, `.`, `_`, `-`.
  ///   - capacity: How many of the newest keys are always remembered.
  /// - Throws: ``ContainerError`` for an invalid name or an unusable directory.
  public init(container: GroupContainer, name: String, capacity: Int = 10_000)
    throws(ContainerError)
  {
    try SafeName.checkPortable(name, kind: "dedupe set name")
    self.name = name
    self.capacity = max(1, capacity)
    let directory = try container.privateDirectory(["dedupe"])
    self.lockDirectory = try directory.reopen()
    self.log = Mutex(KeyLog(directory: directory, fileName: name + ".keys", capacity: capacity))
  }

  /// Records `key`, returning whether it was new.
  ///
  /// - Parameter key: 1 to 65,536 bytes of UTF-8.
  /// - Returns: `true` when no process of the group had recorded it (within the capacity).
  /// - Throws: ``ContainerError`` when the log cannot be read or written.
  @discardableResult
  public func insert(_ key: String) throws(ContainerError) -> Bool {
    try insert([key])[0]
  }

  /// Records several keys with one fsync, returning for each whether it was new.
  ///
  /// A key that appears twice in `keys` is new at most once.
  ///
  /// - Parameter keys: The keys to record.
  /// - Returns: One flag per key, in order.
  /// - Throws: ``ContainerError`` when the log cannot be read or written.
  public func insert(_ keys: [String]) throws(ContainerError) -> [Bool] {
    try withLock { (log) throws(ContainerError) in try log.insert(keys) }
  }

  /// Whether a key has been recorded.
  ///
  /// - Parameter key: The key.
  /// - Throws: ``ContainerError`` when the log cannot be read.
  public func contains(_ key: String) throws(ContainerError) -> Bool {
    try withLock { (log) throws(ContainerError) in log.contains(key) }
  }

  /// Keeps the elements whose key has not been seen, and records those keys.
  ///
  /// Elements with the same key inside `elements` are kept once, the first time.
  ///
  /// - Parameters:
  ///   - elements: The candidates, for example freshly drained items.
  ///   - key: The key of an element, for example its URL string.
  /// - Returns: The elements not seen before, in order.
  /// - Throws: ``ContainerError`` when the log cannot be read or written.
  public func filterNew<Element>(_ elements: [Element], key: (Element) -> String)
    throws(ContainerError) -> [Element]
  {
    let flags = try insert(elements.map(key))
    return zip(elements, flags).compactMap { $1 ? $0 : nil }
  }

  private func withLock<T>(_ body: (inout KeyLog) throws(ContainerError) -> T)
    throws(ContainerError) -> T
  {
    let lockFile = try lockDirectory.openFile(name + ".lock", flags: O_RDWR, create: true)
    _ = try lockFile.lock(exclusive: true, wait: true)
    return try log.withLock { (log) throws(ContainerError) -> T in
      try log.refresh(repair: true)
      return try body(&log)
    }
  }
}
