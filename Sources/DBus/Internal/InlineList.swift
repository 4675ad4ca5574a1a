/// A list that keeps its first element inline and allocates only from the second on.
///
/// Routing tables map thousands of keys to usually one subscriber each; an `Array` per key
/// would be a heap allocation per key.
package struct InlineList<Element: Equatable>: Sequence {
  private enum Storage {
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

  package func makeIterator() -> IndexingIterator<[Element]> {
    switch storage {
    case .empty: [Element]().makeIterator()
    case .one(let only): [only].makeIterator()
    case .many(let elements): elements.makeIterator()
    }
  }
}
