import NotifyCore
import NotifyServerFiles
import Testing

@testable import NotifyServer

/// notifyd's table counts its names with a state as they change (for `Status`), through
/// sets, restores, loads, posts and evictions.
@Suite struct NameTableTests {
  @Test func theCountOfNamesWithAStateFollowsEveryChange() throws {
    var table = NameTable(capacity: 20)
    table.load([
      StateRecord(name: "a.loaded", state: 1, setTimeNanoseconds: 5),
      StateRecord(name: "b.loaded", state: 2, setTimeNanoseconds: 5),
    ])
    #expect(table.stateCount == 2)
    let resetState = table.setState(3, of: "a.loaded", at: 6)
    #expect(resetState, "a name that has a state already")
    #expect(table.stateCount == 2)
    table.recordPost(of: "c.posted", at: 7)
    #expect(table.stateCount == 2, "a post alone gives no state")
    let newState = table.setState(4, of: "c.posted", at: 8)
    #expect(newState)
    #expect(table.stateCount == 3)
    let restored = table.restoreState(9, of: "d.restored", setAt: 1)
    let older = table.restoreState(9, of: "a.loaded", setAt: 1)
    #expect(restored == true)
    #expect(older == false, "older than the table's")
    #expect(table.stateCount == 4)
    // Fill the table with posted names, then evict some to make room for new states.
    for index in 0..<16 { table.recordPost(of: try NotifyName("e.posted\(index)"), at: 10) }
    #expect(table.count == 20)
    let made = try (0..<5).map { table.setState(1, of: try NotifyName("f.new\($0)"), at: 11) }
    #expect(made == [true, true, true, true, true])
    #expect(table.evictions > 0)
    #expect(table.stateCount == 9)
    #expect(table.stateCount == table.entries.values.filter(\.hasState).count)
  }

  /// Two spellings of one text (NFC and NFD) are two names, as for notify(3) and every
  /// receiver: neither's state or posts are the other's (a `String`-keyed table merged them).
  @Test func canonicallyEquivalentSpellingsAreTwoNames() throws {
    let composed = try NotifyName(String("x.caf\u{E9}"))
    let decomposed = try NotifyName(String("x.cafe\u{301}"))
    #expect(composed.rawValue == decomposed.rawValue, "String equality merges them")
    var table = NameTable(capacity: 20)
    let set = table.setState(7, of: composed, at: 1)
    #expect(set)
    table.recordPost(of: decomposed, at: 2)
    #expect(table.state(of: composed) == 7)
    #expect(table.state(of: decomposed) == 0)
    #expect(table.count == 2)
    let restored = table.restoreState(9, of: decomposed, setAt: 3)
    #expect(restored == true)
    #expect(table.state(of: composed) == 7)
    #expect(table.entries[decomposed]?.postCount == 1)
    #expect(table.stateRecords.count == 2)
  }
}
