import AppGroups
import Foundation
import Glibc
import TestSupport
import TestTraits
import Testing

/// The payload `appgroups-stress` writes for an id (mirrors `StressTool.payload(for:)`).
func stressPayload(for id: String) -> [UInt8] {
  let seed = Array(id.utf8)
  let length = 64 + Int(seed.reduce(UInt32(7)) { $0 &* 31 &+ UInt32($1) } % 3000)
  return (0..<length).map { seed[$0 % seed.count] }
}

@Suite(.blocking, .serialized)
struct SpoolProcessTests {
  static let group = "group.com.example.tests"

  @Test(.timeLimit(.minutes(5)))
  func eightProducerProcessesAndAConsumerDeliverEveryItemExactlyOnce() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let producers = 8
    let perProducer = 1000
    let delivered = temporary.path + "/delivered.log"
    let consumer = try Child(
      ["consume", Self.group, delivered, String(producers * perProducer)],
      groups: temporary.groups)
    let children = try (0..<producers).map { index in
      try Child(
        ["produce", Self.group, String(index), String(perProducer), temporary.path + "/c\(index)"],
        groups: temporary.groups)
    }
    for child in children { #expect(child.wait(seconds: 240) == 0) }
    #expect(consumer.wait(seconds: 120) == 0)

    let lines = lines(of: delivered)
    #expect(lines.count == producers * perProducer)
    let unique = Set(lines)
    #expect(unique.count == producers * perProducer)
    #expect(!lines.contains { $0.hasPrefix("BAD") || $0.hasPrefix("CORRUPT") })
    for producer in 0..<producers {
      for index in 0..<perProducer {
        #expect(unique.contains("p\(producer)-\(index)"))
      }
    }
    #expect(try spool.pendingCount() == 0)
    #expect(try FileManager.default.contentsOfDirectory(atPath: spool.path + "/corrupt").isEmpty)
  }

  @Test(.timeLimit(.minutes(5)))
  func killingProducersAndConsumersNeverLosesOrTearsAnItem() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container())
    let delivered = temporary.path + "/delivered.log"
    var committedLogs: [String] = []
    var consumerKills = 0
    var generator = SystemRandomNumberGenerator()
    for round in 0..<8 {
      var children: [Child] = []
      for slot in 0..<3 {
        let producer = round * 10 + slot
        let log = temporary.path + "/c\(producer)"
        committedLogs.append(log)
        children.append(
          try Child(
            ["produce", Self.group, String(producer), "400", log], groups: temporary.groups))
      }
      let consumer = try Child(
        ["consume", Self.group, delivered, "1000000"], groups: temporary.groups)
      usleep(UInt32.random(in: 30_000...400_000, using: &generator))
      // Kill in a random order, at random moments.
      for child in (children + [consumer]).shuffled(using: &generator) {
        child.kill()
        usleep(UInt32.random(in: 0...20_000, using: &generator))
      }
      for child in children + [consumer] { child.wait(seconds: 10) }
      consumerKills += 1
    }

    // The survivors' view: drain what is left in this process, checking every payload.
    var final: [String] = []
    let summary = try spool.drain { entry in
      #expect(entry.payload == stressPayload(for: entry.id), "torn payload for \(entry.id)")
      final.append(entry.id)
    }
    #expect(summary.setAside.isEmpty, "\(summary.setAside)")

    let byChildren = lines(of: delivered)
    #expect(!byChildren.contains { $0.hasPrefix("BAD") || $0.hasPrefix("CORRUPT") })
    let all = byChildren + final
    let committed = Set(committedLogs.flatMap { lines(of: $0) })
    #expect(!committed.isEmpty)
    let missing = committed.subtracting(all)
    #expect(missing.isEmpty, "committed but never delivered: \(missing.sorted().prefix(10))")
    // Each consumer kill can repeat at most the one item whose handler had returned but
    // whose id was not yet recorded.
    let duplicates = all.count - Set(all).count
    #expect(duplicates <= consumerKills)
    #expect(try spool.pendingCount() == 0)
    #expect(try FileManager.default.contentsOfDirectory(atPath: spool.path + "/corrupt").isEmpty)
  }
}
