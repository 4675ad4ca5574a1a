/// A poster's count of its posts of each name: the `Posted` signal's third argument
/// (`Protocol/notify.md`), which lets a receiver see that the bus dropped posts.
///
/// It holds at most ``capacity`` names. A new name beyond that starts the table over, so
/// those counts restart at 1; a receiver takes a count that goes down as a new start,
/// never as a gap, so forgetting costs at most a missed detection, never a false one.
public struct PostCounts: Sendable {
  /// The most names counted at once.
  public let capacity: Int
  private var counts: [NotifyName: UInt64] = [:]

  /// An empty table of at most `capacity` names.
  public init(capacity: Int = 4096) { self.capacity = max(1, capacity) }

  /// Counts a post of `name`: 1 for its first post, then one more each time.
  public mutating func next(for name: NotifyName) -> UInt64 {
    if counts[name] == nil && counts.count >= capacity { counts.removeAll(keepingCapacity: true) }
    let count = (counts[name] ?? 0) &+ 1
    counts[name] = count
    return count
  }

  /// Undoes the ``next(for:)`` that returned `count`, if it is still the name's latest (a
  /// post that was not made, so the next one takes the same count).
  public mutating func giveBack(_ count: UInt64, for name: NotifyName) {
    guard let index = counts.index(forKey: name), counts.values[index] == count else { return }
    if count > 1 { counts.values[index] = count - 1 } else { counts.remove(at: index) }
  }
}
