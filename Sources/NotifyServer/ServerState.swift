import Notify

/// Everything `notifyd` changes while serving, kept under one lock.
struct ServerState {
  /// Who a caller is, as the bus reported it.
  struct Caller {
    var user: UInt32
    var groups: [UInt32]
  }

  /// Counters for `GetStatistics`.
  struct Statistics {
    var stateSets: UInt64 = 0
    var stateGets: UInt64 = 0
    var restores: UInt64 = 0
    var mediatedPosts: UInt64 = 0
    var postsSeen: UInt64 = 0
    var malformedSignals: UInt64 = 0
    var denied: UInt64 = 0
    var invalidCalls: UInt64 = 0
    var callerLookups: UInt64 = 0
    var saves: UInt64 = 0
    var saveFailures: UInt64 = 0
  }

  var table: NameTable
  var statistics = Statistics()
  /// Callers' identities by unique name, dropped when they leave the bus.
  var callers: [String: Caller] = [:]
  /// Callers with a call waiting for its identity: later calls of theirs queue here, in
  /// order, so they are not overtaken.
  var queues: [String: [CheckedContinuation<Void, Never>]] = [:]
  /// The sequence number of the last mediated post.
  var postSequence: UInt64 = 0
  /// The count of mediated posts of each name, for receivers to see gaps.
  var postCounts = PostCounts()
  var dirty = false
  var saveScheduled = false
  var startTime: UInt64 = 0

  init(capacity: Int) { table = NameTable(capacity: capacity) }

  /// The counters of `GetStatistics` (its `t` values but `StartTime`), in the order the
  /// status dump lists them.
  var counters: [(key: String, value: UInt64)] {
    [
      ("StateSets", statistics.stateSets), ("StateGets", statistics.stateGets),
      ("Restores", statistics.restores), ("MediatedPosts", statistics.mediatedPosts),
      ("PostsSeen", statistics.postsSeen), ("MalformedSignals", statistics.malformedSignals),
      ("UntrackedPosts", table.untrackedPosts), ("Evictions", table.evictions),
      ("Denied", statistics.denied), ("InvalidCalls", statistics.invalidCalls),
      ("CallerLookups", statistics.callerLookups), ("StateFileWrites", statistics.saves),
      ("StateFileFailures", statistics.saveFailures),
    ]
  }
}
