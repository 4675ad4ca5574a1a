import NotifyCore

/// What a bridge keeps while its broker is away.
///
/// One entry per name and kind, the newest state winning, in the order the names first
/// came. Bounded: beyond ``limit`` names, new ones are refused (and counted by the caller).
///
/// Coalescing loses nothing a watcher could see: a Darwin delivery means "posted since",
/// so ten posts of a name during an outage are one post after it.
package struct OutageQueue: Sendable {
  struct Key: Hashable, Sendable {
    var kind: TopicMap.Kind
    var name: NotifyName
  }

  package let limit: Int
  private var order: [Key] = []
  private var entries: [Key: BridgeMessage] = [:]

  package init(limit: Int) { self.limit = limit }

  package var count: Int { order.count }

  /// Keeps `message`; `false` when the queue is full and the name is new.
  package mutating func add(_ message: BridgeMessage) -> Bool {
    let key = Key(kind: message.kind, name: message.name)
    if entries[key] == nil {
      guard order.count < limit else { return false }
      order.append(key)
    }
    entries[key] = message
    return true
  }

  /// Everything kept, oldest name first; the queue is then empty.
  package mutating func drain() -> [BridgeMessage] {
    defer {
      order.removeAll()
      entries.removeAll()
    }
    return order.compactMap { entries[$0] }
  }
}
