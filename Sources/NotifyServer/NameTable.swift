import NotifyCore
import NotifyServerFiles

/// The names `notifyd` knows: their state, when it was set, and how often they were
/// posted; bounded.
///
/// Names with a state are kept until the limit is reached (then setting the state of a
/// new name fails). Names only seen posted are evicted, least recently posted first,
/// to make room.
///
/// Keyed by ``NotifyName``, which compares bytes: `String` keys would merge two names that
/// are canonically equivalent but spelled differently (`x.café` in NFC and in NFD), which
/// are two names to notify(3) and to every receiver.
struct NameTable {
  /// What `notifyd` knows about one name.
  struct Entry {
    /// The state, when set.
    var state: UInt64 = 0
    /// When the state was set, in nanoseconds since the epoch; 0 when never set.
    var setTime: UInt64 = 0
    /// Whether the state was ever set (or restored).
    var hasState = false
    /// Posts seen on the bus.
    var postCount: UInt64 = 0
    /// ``NameTable/clock`` at the last post, for eviction.
    var lastUse: UInt64 = 0
    /// When the last post was seen, in nanoseconds since the epoch; 0 when never.
    var lastPostTime: UInt64 = 0

    mutating func recordPost(at time: UInt64, use: UInt64) {
      postCount += 1
      lastUse = use
      lastPostTime = time
    }
  }

  private(set) var entries: [NotifyName: Entry] = [:]
  private(set) var clock: UInt64 = 0
  let capacity: Int
  /// Posts not counted because the table was full of names with a state.
  private(set) var untrackedPosts: UInt64 = 0
  /// Post-only names evicted to make room.
  private(set) var evictions: UInt64 = 0

  init(capacity: Int) { self.capacity = max(1, capacity) }

  var count: Int { entries.count }
  /// The names with a state, counted as they change: `Status` does not walk the table.
  private(set) var stateCount = 0

  func state(of name: NotifyName) -> UInt64 { entries[name]?.state ?? 0 }

  /// Sets a state; `false` when the table is full.
  mutating func setState(_ value: UInt64, of name: NotifyName, at time: UInt64) -> Bool {
    guard makeRoom(for: name) else { return false }
    clock += 1
    if entries[name]?.hasState != true { stateCount += 1 }
    entries[name, default: Entry()].state = value
    entries[name]?.setTime = time
    entries[name]?.hasState = true
    entries[name]?.lastUse = clock
    return true
  }

  /// Applies a value remembered by a client if it is newer than the table's.
  ///
  /// - Returns: Whether it was applied, or `nil` when the table is full.
  mutating func restoreState(_ value: UInt64, of name: NotifyName, setAt time: UInt64) -> Bool? {
    if let entry = entries[name], entry.hasState, entry.setTime >= time { return false }
    return setState(value, of: name, at: time) ? true : nil
  }

  /// Counts a post of `name` seen at `time` (nanoseconds since the epoch).
  ///
  /// A known name's entry is updated in place, found once: every post of every name a
  /// bridge carries comes through here, on the thread that reads the bus.
  mutating func recordPost(of name: NotifyName, at time: UInt64) {
    if let index = entries.index(forKey: name) {
      clock += 1
      entries.values[index].recordPost(at: time, use: clock)
      return
    }
    guard makeRoom(for: name) else {
      untrackedPosts += 1
      return
    }
    clock += 1
    var entry = Entry()
    entry.recordPost(at: time, use: clock)
    entries[name] = entry
  }

  /// Loads records read from the state file; a record whose name is not a valid notify
  /// name (no call could reach it) is skipped.
  mutating func load(_ records: [StateRecord]) {
    for record in records.prefix(capacity) {
      guard let name = try? NotifyName(record.name) else { continue }
      if entries[name]?.hasState != true { stateCount += 1 }
      entries[name] = Entry(
        state: record.state, setTime: record.setTimeNanoseconds, hasState: true)
    }
  }

  /// The entries in the order of their names' bytes.
  var sortedEntries: [(key: NotifyName, value: Entry)] {
    entries.sorted { $0.key.rawValue.utf8.lexicographicallyPrecedes($1.key.rawValue.utf8) }
  }

  /// The names with a state, for the state file.
  var stateRecords: [StateRecord] {
    entries.compactMap { name, entry in
      entry.hasState
        ? StateRecord(name: name.rawValue, state: entry.state, setTimeNanoseconds: entry.setTime)
        : nil
    }
  }

  /// Makes room for `name` if it is new: evicts the least recently posted tenth of the
  /// post-only names when full.
  private mutating func makeRoom(for name: NotifyName) -> Bool {
    if entries[name] != nil || entries.count < capacity { return true }
    let postOnly = entries.filter { !$0.value.hasState }.sorted {
      $0.value.lastUse < $1.value.lastUse
    }
    guard !postOnly.isEmpty else { return false }
    for (victim, _) in postOnly.prefix(max(1, capacity / 10)) {
      entries[victim] = nil
      evictions += 1
    }
    return true
  }
}
