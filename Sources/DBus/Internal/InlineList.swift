/// A list that keeps its first element inline and allocates only from the second on.
///
/// Routing tables map thousands of keys to usually one subscriber each; an `Array` per key
/// would be a heap allocation per key.
package struct InlineList<Element: Equatable>: Sequence {
  fileprivate enum Storage {
    case empty
    case one(Element)
    case many([Element])
  }

  private var storage = Storage.empty

  package init() {}

  package var isEmpty: Bool {
    if case .empty = storage { return true }
    return false
  }

  package mutating func append(_ element: Element) {
    switch storage {
    case .empty: storage = .one(element)
    case .one(let first): storage = .many([first, element])
    case .many(var elements):
      storage = .empty
      elements.append(element)
      storage = .many(elements)
    }
  }

  package mutating func removeAll(_ element: Element) {
    switch storage {
    case .empty: return
    case .one(let only): if only == element { storage = .empty }
    case .many(var elements):
      storage = .empty
      elements.removeAll { $0 == element }
      storage =
        elements.count > 1 ? .many(elements) : elements.first.map { .one($0) } ?? .empty
    }
  }

  package func makeIterator() -> Iterator {
    Iterator(storage: storage)
  }

  /// Walks the list without copying it: a single element is yielded from where it lies,
  /// so routing a message to one subscriber allocates nothing.
  package struct Iterator: IteratorProtocol {
    fileprivate let storage: Storage
    fileprivate var index = 0

    package mutating func next() -> Element? {
      defer { index += 1 }
      switch storage {
      case .empty: return nil
      case .one(let only): return index == 0 ? only : nil
      case .many(let elements): return index < elements.count ? elements[index] : nil
      }
    }
  }
}
