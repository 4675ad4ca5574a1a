import DBusCore
import NotifyCore
import Testing

/// A poster's count of each name's posts, the interfaces it keeps for them, and giving
/// back the count of a post that was not made.
struct PostCountsTests {
  @Test func eachNameCountsFromOneAndKeepsItsInterface() throws {
    var counts = PostCounts()
    let names: [NotifyName] = [
      "group.example.a", "group.example.b", "9lives._under.score", "group.example.a",
    ]
    var seen: [String] = []
    for name in names {
      let (count, interface) = counts.nextPost(of: name)
      #expect(interface == NotifyWire.interface(for: name))
      seen.append("\(name) \(count)")
    }
    #expect(
      seen == [
        "group.example.a 1", "group.example.b 1", "9lives._under.score 1", "group.example.a 2",
      ])
    let third = counts.next(for: "group.example.a")
    #expect(third == 3, "both ways count the same posts")
    let (count, interface) = counts.nextPost(of: "group.example.b")
    #expect(count == 2 && interface == NotifyWire.interface(for: "group.example.b"))
    let long = try NotifyName(String(repeating: "x", count: 300))
    let first = counts.nextPost(of: long).interface
    let kept = counts.nextPost(of: long).interface
    #expect(first == NotifyWire.interface(for: long) && kept == first)
    #expect(kept.rawValue.hasPrefix(NotifyWire.hashedInterfacePrefix))
  }

  /// A new name beyond the capacity starts the table over: the counts restart at 1.
  @Test func aFullTableStartsOver() {
    var counts = PostCounts(capacity: 2)
    var seen: [UInt64] = []
    seen.append(counts.next(for: "a.one"))
    seen.append(counts.nextPost(of: "a.one").nameSequence)
    seen.append(counts.next(for: "a.two"))
    let (count, interface) = counts.nextPost(of: "a.three")
    seen.append(count)
    seen.append(counts.next(for: "a.one"))  // forgotten when the table started over
    seen.append(counts.next(for: "a.three"))
    #expect(seen == [1, 2, 1, 1, 1, 2])
    #expect(interface == NotifyWire.interface(for: "a.three"))
  }

  @Test func aCountGivenBackIsTakenAgainByTheNextPost() {
    var counts = PostCounts()
    #expect(counts.next(for: "a.b") == 1)
    #expect(counts.next(for: "a.b") == 2)
    counts.giveBack(2, for: "a.b")
    #expect(counts.next(for: "a.b") == 2)
    counts.giveBack(1, for: "c.d")
    #expect(counts.next(for: "c.d") == 1)
    counts.giveBack(1, for: "c.d")
    #expect(counts.nextPost(of: "c.d").nameSequence == 1)
  }

  @Test func aCountIsGivenBackOnlyWhileItIsTheLatest() {
    var counts = PostCounts()
    let first = counts.next(for: "a.b")
    #expect(counts.next(for: "a.b") == 2)
    // Another post took a later count meanwhile: giving back the earlier one would
    // make the next post repeat a count receivers have seen.
    counts.giveBack(first, for: "a.b")
    #expect(counts.next(for: "a.b") == 3)
  }
}
