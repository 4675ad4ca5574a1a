public import DBusCore

/// A poster's count of its posts of each name: the `Posted` signal's third argument
/// (`Protocol/notify.md`), which lets a receiver see that the bus dropped posts.
///
/// It holds at most ``capacity`` names. A new name beyond that starts the table over, so
/// those counts restart at 1; a receiver takes a count that goes down as a new start,
/// never as a gap, so forgetting costs at most a missed detection, never a false one.
///
/// A poster that counts with ``nextPost(of:)`` also keeps each name's signal interface
/// here, built on the name's first post instead of on every one.
public struct PostCounts: Sendable {
  /// The most names counted at once.
  public let capacity: Int
  private var counts: [NotifyName: Entry] = [:]

  private struct Entry {
    var count: UInt64
    /// ``NotifyWire/interface(for:)`` of the name, once ``nextPost(of:)`` needed it.
    var interface: InterfaceName?
  }

  /// An empty table of at most `capacity` names.
  public init(capacity: Int = 4096) { self.capacity = max(1, capacity) }

  /// Counts a post of `name`: 1 for its first post, then one more each time.
  public mutating func next(for name: NotifyName) -> UInt64 {
    // One lookup for a name counted before: this runs for every post.
    if let index = counts.index(forKey: name) {
      counts.values[index].count &+= 1
      return counts.values[index].count
    }
    insert(name, Entry(count: 1))
    return 1
  }

  /// Counts a post of `name` as ``next(for:)`` does, and gives the interface its signal
  /// carries (``NotifyWire/interface(for:)``), kept from the name's earlier posts.
  public mutating func nextPost(of name: NotifyName) -> (
    nameSequence: UInt64, interface: InterfaceName
  ) {
    if let index = counts.index(forKey: name) {
      counts.values[index].count &+= 1
      let interface = counts.values[index].interface ?? NotifyWire.interface(for: name)
      counts.values[index].interface = interface
      return (counts.values[index].count, interface)
    }
    let interface = NotifyWire.interface(for: name)
    insert(name, Entry(count: 1, interface: interface))
    return (1, interface)
  }

  private mutating func insert(_ name: NotifyName, _ entry: Entry) {
    if counts.count >= capacity { counts.removeAll(keepingCapacity: true) }
    counts[name] = entry
  }

  /// Undoes the ``next(for:)`` that returned `count`, if it is still the name's latest (a
  /// post that was not made, so the next one takes the same count).
  public mutating func giveBack(_ count: UInt64, for name: NotifyName) {
    guard let index = counts.index(forKey: name), counts.values[index].count == count else {
      return
    }
    counts.values[index].count = count &- 1
  }
}
