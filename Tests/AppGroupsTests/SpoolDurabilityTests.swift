import Dispatch
import Foundation
import Glibc
import Synchronization
import SystemSupport
import TestSupport
import Testing

@testable import AppGroups

/// The order of a producer's flushes that the crash argument rests on.
///
/// What a machine crash would take away cannot be tested by crashing the machine; what can be
/// tested is the order the argument in `Protocol/container.md` §4.4 rests on. Four threads of
/// one producer process enqueue at once under `strace -f`, and for every enqueue that
/// returned (its id is in the committed log), the trace must show, before the id was logged:
/// the `pwrite` of its record into its segment, then an `fdatasync` of that segment that
/// started after the `pwrite` ended; and for the segment, the `fdatasync` of its zeros in
/// `tmp/`, its `rename` into `segments/`, then an `fsync` of `segments/` that started after
/// the rename.
@Suite(.serialized)
struct SpoolDurabilityTests {
  @Test(.timeLimit(.minutes(3)))
  func everyReturnedEnqueueFlushedItsRecordAndItsSegmentsNameBeforeReturning() throws {
    let strace = "/usr/bin/strace"
    #expect(access(strace, X_OK) == 0, "strace is missing: run Scripts/bootstrap")
    guard access(strace, X_OK) == 0 else { return }
    let temporary = TemporaryDirectory()
    let trace = temporary.path + "/trace"
    let committed = temporary.path + "/committed"
    let threads = 4
    let perThread = 40
    var environment = Products.currentEnvironment()
    environment["NOTIFYBUS_GROUPS_DIR"] = temporary.groups
    let process = try Subprocess.spawn(
      strace,
      arguments: [
        "-f", "-qq", "-y", "-s", "64", "-o", trace, "-e",
        "trace=fdatasync,fsync,renameat2,write,pwrite64",
        Products.path("appgroups-stress"), "produce-threads", "group.com.example.tests", "0",
        String(threads), String(perThread), committed,
      ],
      environment: environment, captureOutput: false)
    #expect(process.wait(milliseconds: 150_000).map { $0 == .exited(0) } ?? false)

    // Where each record is: the producer's segments are still there (nobody drained).
    let segments = temporary.groups + "/group.com.example.tests/spool/default/segments"
    var records: [String: (segment: String, offset: Int)] = [:]
    for name in try FileManager.default.contentsOfDirectory(atPath: segments)
    where name.hasSuffix(".seg") {
      let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: segments + "/" + name)))
      for record in SpoolSegmentFormat.scan(bytes, from: SpoolSegmentFormat.headerSize).records {
        records[record.id] = (name, record.offset)
      }
    }
    let ids = lines(of: committed)
    #expect(ids.count == threads * perThread)
    let events = try StraceEvents(String(contentsOfFile: trace, encoding: .utf8))
    var checked = 0
    for id in ids {
      guard let (segment, offset) = records[id] else {
        Issue.record("\(id) is in no segment")
        continue
      }
      guard let written = events.recordWrites["\(segment)@\(offset)"],
        let logged = events.logWrites[id]
      else {
        Issue.record("\(id): no pwrite of its record, or no committed-log write")
        continue
      }
      let flushed = events.dataSyncs[segments + "/" + segment, default: []].contains {
        $0.start > written && $0.end < logged
      }
      #expect(
        flushed, "\(id): no fdatasync of its segment began after its pwrite and ended before return"
      )
      guard let renamed = events.segmentRenames[segment],
        let prepared = events.dataSyncs.first(where: { $0.key.hasSuffix("/tmp/" + segment) })?
          .value,
        prepared.contains(where: { $0.end < renamed })
      else {
        Issue.record("\(id): its segment was not flushed in tmp/ and renamed into segments/")
        continue
      }
      let named = events.segmentsSyncs.contains { $0.start > renamed && $0.end < logged }
      #expect(
        named,
        "\(id): no fsync of segments/ began after its segment's rename and ended before return")
      checked += 1
    }
    #expect(checked == threads * perThread)
    // One flush per enqueue at most: fewer when threads share one.
    let recordSyncs = events.dataSyncs.filter { $0.key.hasPrefix(segments) }.values.map(\.count)
    #expect(recordSyncs.reduce(0, +) <= ids.count)
  }
}

/// The events of an `strace -f -y` log that the durability test needs, by line number.
///
/// A call another thread interrupted is printed as `… <unfinished ...>` when it starts and
/// `<... name resumed> …` when it ends; a call printed whole started and ended at its line.
private struct StraceEvents {
  struct Interval {
    var start: Int
    var end: Int
  }

  /// `pwrite64` into a segment, by `<segment>@<offset>`: the line it ended.
  var recordWrites: [String: Int] = [:]
  /// `fdatasync` by path.
  var dataSyncs: [String: [Interval]] = [:]
  /// Renames into `segments/`, by name: the line it ended.
  var segmentRenames: [String: Int] = [:]
  var segmentsSyncs: [Interval] = []
  var logWrites: [String: Int] = [:]

  init(_ text: String) throws {
    // Calls started but not yet ended, by thread: (name, first line's text, start line).
    var pending: [String: (call: String, text: String, start: Int)] = [:]
    for (number, line) in text.split(separator: "\n").enumerated() {
      let parts = line.split(separator: " ", maxSplits: 1)
      guard parts.count == 2 else { continue }
      let thread = String(parts[0])
      var body = parts[1].trimmingCharacters(in: .whitespaces)
      var start = number
      if body.hasSuffix("<unfinished ...>") {
        let call = String(body.prefix { $0 != "(" })
        pending[thread] = (call, body, number)
        continue
      }
      if body.hasPrefix("<... "), let begun = pending.removeValue(forKey: thread) {
        let rest = body.drop { $0 != ">" }.dropFirst()
        body =
          begun.text.replacingOccurrences(of: " <unfinished ...>", with: "")
          + rest.trimmingCharacters(in: .whitespaces)
        start = begun.start
      }
      record(body, start: start, end: number)
    }
  }

  private mutating func record(_ call: String, start: Int, end: Int) {
    if call.hasPrefix("fdatasync("), call.hasSuffix("= 0"), let path = Self.path(in: call) {
      dataSyncs[path, default: []].append(Interval(start: start, end: end))
    } else if call.hasPrefix("fsync("), call.hasSuffix("= 0"), let path = Self.path(in: call),
      path.hasSuffix("/segments")
    {
      segmentsSyncs.append(Interval(start: start, end: end))
    } else if call.hasPrefix("renameat2("), call.hasSuffix("= 0"), call.contains("/segments>") {
      let quoted = call.split(separator: "\"")
      guard quoted.count >= 4 else { return }
      segmentRenames[String(quoted[3])] = end
    } else if call.hasPrefix("pwrite64("), let path = Self.path(in: call),
      path.hasSuffix(".seg"), let comma = call.lastIndex(of: ","),
      let close = call.lastIndex(of: ")")
    {
      let offset = call[call.index(after: comma)..<close].trimmingCharacters(in: .whitespaces)
      let name = String(path.split(separator: "/").last!)
      recordWrites["\(name)@\(offset)"] = end
    } else if call.hasPrefix("write("), let path = Self.path(in: call), path.hasSuffix("/committed")
    {
      let quoted = call.split(separator: "\"")
      guard quoted.count >= 2 else { return }
      logWrites[quoted[1].replacingOccurrences(of: "\\n", with: "")] = start
    }
  }

  /// The path `-y` prints for the first descriptor argument: `call(3</a/b>, …`.
  private static func path(in call: String) -> String? {
    guard let open = call.firstIndex(of: "<"), let close = call.firstIndex(of: ">") else {
      return nil
    }
    return String(call[call.index(after: open)..<close])
  }
}

/// Group commit: callers that arrive while a sync runs share the next one, and none returns
/// before a sync that started after it arrived has ended.
struct GroupSyncTests {
  @Test(.timeLimit(.minutes(1)))
  func callersShareTheNextSyncAndNeverReturnOnAnEarlierOne() throws {
    let group = GroupSync()
    let clock = Mutex((now: 0, syncs: [(start: Int, end: Int)]()))
    let tick: @Sendable () -> Int = {
      clock.withLock {
        $0.now += 1
        return $0.now
      }
    }
    let threads = 8
    let rounds = 5
    let violations = Mutex(0)
    // Threads of their own: Dispatch would run no more at once than there are cores.
    let done = DispatchGroup()
    for _ in 0..<threads {
      done.enter()
      Thread.detachNewThread {
        defer { done.leave() }
        for _ in 0..<rounds {
          let arrived = tick()
          try? group.sync { () throws(ContainerError) in
            let start = tick()
            usleep(20_000)
            let end = tick()
            clock.withLock { $0.syncs.append((start, end)) }
          }
          let returned = tick()
          let covered = clock.withLock { state in
            state.syncs.contains { $0.start > arrived && $0.end < returned }
          }
          if !covered { violations.withLock { $0 += 1 } }
        }
      }
    }
    done.wait()
    #expect(violations.withLock { $0 } == 0)
    let syncs = clock.withLock { $0.syncs.count }
    #expect(syncs < threads * rounds, "\(syncs) syncs for \(threads * rounds) callers")
    #expect(syncs >= rounds)
  }

  @Test func aFailedSyncFailsTheCallersItServed() {
    let group = GroupSync()
    let failure = ContainerError(code: .busy, path: "/x", message: "flush failed")
    let error = #expect(throws: ContainerError.self) {
      try group.sync { () throws(ContainerError) in throw failure }
    }
    #expect(error?.message == "flush failed")
    #expect(throws: Never.self) { try group.sync { () throws(ContainerError) in } }
  }

  /// After a segment's `fdatasync` failed, every caller waiting and every later one fails.
  ///
  /// Linux reports a writeback error once per open file description, so after one failed
  /// the next returns 0 although the data it covered may be lost.
  @Test(.timeLimit(.minutes(1))) func aFailedSegmentSyncPoisonsEveryLaterCaller() {
    let group = GroupSync(poisonedByFailure: true)
    let failure = ContainerError(code: .busy, path: "/x", message: "flush failed.")
    let started = DispatchSemaphore(value: 0)
    let release = DispatchSemaphore(value: 0)
    let waiterReturned = DispatchSemaphore(value: 0)
    let waiterResult = Mutex<ContainerError?>(nil)
    let syncsRun = Mutex(0)
    Thread.detachNewThread {
      try? group.sync { () throws(ContainerError) in
        started.signal()
        release.wait()
        throw failure
      }
    }
    started.wait()
    // A caller whose record the failing sync may or may not cover: it must not succeed on
    // a later sync that returns 0.
    Thread.detachNewThread {
      do throws(ContainerError) {
        try group.sync { () throws(ContainerError) in syncsRun.withLock { $0 += 1 } }
      } catch {
        waiterResult.withLock { $0 = error }
      }
      waiterReturned.signal()
    }
    usleep(50_000)
    release.signal()
    waiterReturned.wait()
    #expect(waiterResult.withLock { $0 }?.message.hasPrefix("flush failed.") == true)
    let later = #expect(throws: ContainerError.self) {
      try group.sync { () throws(ContainerError) in syncsRun.withLock { $0 += 1 } }
    }
    #expect(later?.message.contains("may not be on disk") == true)
    #expect(syncsRun.withLock { $0 } == 0)
  }
}
