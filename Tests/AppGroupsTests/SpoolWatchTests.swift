import AppGroups
import Foundation
import TestSupport
import Testing

/// What wakes a consumer's spool watch: what producers add, never what the consumer does.
struct SpoolWatchTests {
  /// A record appended by a producer and an entry with attachments renamed into `new/` are
  /// changes; a consumer's drain (its cursor, `delivered.keys`, claims and removals) and a
  /// quiet spool are not.
  @Test func producersChangeTheSpoolAndAConsumersDrainDoesNot() throws {
    let temporary = TemporaryDirectory()
    let producer = try Spool(container: temporary.container(), name: "watched")
    let consumer = try Spool(container: temporary.container(), name: "watched")
    let watch = try SpoolWatch(consumer)
    #expect(!watch.readChanges(), "nothing happened yet")

    try producer.enqueue(payload: Array("a record".utf8))
    #expect(watch.readChanges(), "a record appended to a segment")
    var drained = 0
    try consumer.drain { _ in drained += 1 }
    #expect(drained == 1)
    #expect(!watch.readChanges(), "the consumer's own drain woke it")

    let file = temporary.path + "/photo.jpg"
    #expect(FileManager.default.createFile(atPath: file, contents: Data([1, 2, 3])))
    try producer.enqueue(payload: [1], attachments: [.file(URL(fileURLWithPath: file))])
    #expect(watch.readChanges(), "an entry moved into new/")
    try consumer.drain { _ in drained += 1 }
    #expect(drained == 2)
    #expect(!watch.readChanges(), "the consumer's claim and removal woke it")
  }

  /// Events pile up while nobody reads: one read takes them all, and the next finds none.
  @Test func oneReadTakesEveryWaitingEvent() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container(), name: "watched")
    let watch = try SpoolWatch(spool)
    for index in 0..<500 { try spool.enqueue(payload: Array("record \(index)".utf8)) }
    #expect(watch.readChanges())
    #expect(!watch.readChanges())
  }
}
