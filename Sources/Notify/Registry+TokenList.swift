/// The tokens of one subject's registrations, in the order they were made.
///
/// Appending and removing cost O(1) amortized and a fan-out O(live tokens), however many
/// registrations a name has: a removal only counts its token as gone, and the list drops its
/// gone tokens once they outnumber the live ones (``remove()`` says when; the registry,
/// which knows the live tokens, rebuilds the list with ``init(_:)``), so it never holds
/// more than twice the live tokens plus one. Iteration therefore also yields removed tokens:
/// callers look each up in the registry, as they must anyway.
///
/// The first token is kept inline: most names have a single registration, and a name costs
/// no allocation here until its second.
struct TokenList: Sequence {
  /// The oldest token; `nil` only when the list holds none.
  private var first: NotifyToken?
  private var others: [NotifyToken] = []
  /// The live tokens.
  var count: Int { Int(liveCount) }
  // 32-bit counts keep a name's entry small; a process has fewer than 2³¹ tokens.
  private var liveCount: UInt32 = 0
  /// Removed tokens still held.
  private var removed: UInt32 = 0

  var isEmpty: Bool { liveCount == 0 }

  mutating func append(_ token: NotifyToken) {
    if first == nil {
      first = token
    } else {
      others.append(token)
    }
    liveCount += 1
  }

  /// Counts one token as removed.
  ///
  /// - Returns: Whether the list should be compacted: it holds more removed tokens than live
  ///   ones.
  mutating func remove() -> Bool {
    precondition(liveCount > 0, "a token removed from a list with none live")
    liveCount -= 1
    removed += 1
    if liveCount == 0 {
      self = TokenList()
      return false
    }
    return removed > liveCount
  }

  init() {}

  /// A list of `tokens`, in order, all live: what a list compacts to.
  init(_ tokens: some Sequence<NotifyToken>) {
    for token in tokens { append(token) }
  }

  func makeIterator() -> Iterator { Iterator(first: first, others: others.makeIterator()) }

  /// Yields the inline token, then the others; allocates nothing.
  struct Iterator: IteratorProtocol {
    fileprivate var first: NotifyToken?
    fileprivate var others: IndexingIterator<[NotifyToken]>

    mutating func next() -> NotifyToken? {
      if let token = first {
        first = nil
        return token
      }
      return others.next()
    }
  }
}
