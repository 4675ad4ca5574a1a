import NotifyCore
import Testing

/// A poster's per-name counts, and giving back the count of a post that was not made.
struct PostCountsTests {
  @Test func aCountGivenBackIsTakenAgainByTheNextPost() {
    var counts = PostCounts()
    #expect(counts.next(for: "a.b") == 1)
    #expect(counts.next(for: "a.b") == 2)
    counts.giveBack(2, for: "a.b")
    #expect(counts.next(for: "a.b") == 2)
    counts.giveBack(1, for: "c.d")
    #expect(counts.next(for: "c.d") == 1)
    counts.giveBack(1, for: "c.d")
    #expect(counts.next(for: "c.d") == 1)
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
