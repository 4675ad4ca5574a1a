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
/// returned (its id is in the committed log), the trace must show, in this order:
/// the `fdatasync` of its `tmp/` file, its `rename` into `new/`, then an `fsync` of `new/`
/// that started after the rename returned and ended before the id was logged.
@Suite(.serialized)
struct SpoolDurabilityTests {
  @Test(.timeLimit(.minutes(3)))
  func everyReturnedEnqueueFlushedItsFileThenItsNameInNewBeforeReturning() throws {
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
        "-f", "-qq", "-y", "-o", trace, "-e", "trace=fdatasync,fsync,renameat2,write",
        Products.path("appgroups-stress"), "produce-threads", "group.com.example.tests", "0",
        String(threads), String(perThread), committed,
      ],
      environment: environment, captureOutput: false)
    #expect(process.wait(milliseconds: 150_000).map { $0 == .exited(0) } ?? false)

    let ids = lines(of: committed)
    #expect(ids.count == threads * perThread)
    let events = try StraceEvents(String(contentsOfFile: trace, encoding: .utf8))
    var checked = 0
    for id in ids {
      guard let rename = events.renames[id] else {
        Issue.record("no rename into new/ for \(id) among \(events.renames.count)")
        continue
      }
      guard let flushed = events.dataSyncEnds[rename.scratch], flushed < rename.end else {
        Issue.record("\(id): its tmp/ file was not flushed before its rename")
        continue
      }
      guard let logged = events.logWrites[id] else {
        Issue.record("no committed-log write for \(id)")
        continue
      }
      let covering = events.incomingSyncs.contains { $0.start > rename.end && $0.end < logged }
      #expect(covering, "\(id): no fsync of new/ began after its rename and ended before return")
      checked += 1
    }
    #expect(checked == threads * perThread)
    #expect(events.incomingSyncs.count <= ids.count)
  }
}

/// The events of an `strace -f -y` log that the durability test needs, by line number.
///
/// A call another thread interrupted is printed as `… <unfinished ...>` when it starts and
/// `<... name resumed> …` when it ends; a call printed whole started and ended at its line.
private struct StraceEvents {
  struct Rename {
    var scratch: String
    var end: Int
  }
  struct Interval {
    var start: Int
    var end: Int
  }

  var renames: [String: Rename] = [:]
  var dataSyncEnds: [String: Int] = [:]
  var logWrites: [String: Int] = [:]
  var incomingSyncs: [Interval] = []

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
    guard call.hasSuffix("= 0") || call.contains("write(") else { return }
    if call.hasPrefix("fdatasync("), let path = Self.path(in: call),
      path.contains("/spool/default/tmp/")
    {
      dataSyncEnds[String(path.split(separator: "/").last!)] = end
    } else if call.hasPrefix("fsync("), let path = Self.path(in: call), path.hasSuffix("/new") {
      incomingSyncs.append(Interval(start: start, end: end))
    } else if call.hasPrefix("renameat2("), call.contains("/new>") {
      let quoted = call.split(separator: "\"")
      guard quoted.count >= 4 else { return }
      let scratch = String(quoted[1])
      let final = String(quoted[3])
      guard let id = final.split(separator: ".", maxSplits: 2).last else { return }
      renames[String(id)] = Rename(scratch: scratch, end: end)
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
}
