import AppGroups
import Dispatch
import Foundation
import Glibc
import Synchronization

/// The child process behind the AppGroups multi-process tests.
///
/// ```
/// appgroups-stress produce <group> <producer> <count> <committed-log>
/// appgroups-stress produce-threads <group> <producer> <threads> <count> <committed-log> [<padding>]
/// appgroups-stress consume <group> <delivered-log> <expected-distinct> [<delivered-capacity>]
/// appgroups-stress defaults-write <group> <writer> <count>
/// appgroups-stress produce-forked <group>
/// ```
/// The container location comes from `NOTIFYBUS_GROUPS_DIR`. `produce` appends each id to
/// `committed-log` after `enqueue` returned. `consume` drains until it has seen
/// `expected-distinct` ids, appending `id` (or `BAD id` for a payload that does not match
/// its id) to `delivered-log`.
@main
enum StressTool {
  static func main() {
    let arguments = Array(CommandLine.arguments.dropFirst())
    do {
      switch arguments.first {
      case "produce" where arguments.count == 5:
        try produce(
          group: arguments[1], producer: Int(arguments[2])!, count: Int(arguments[3])!,
          log: arguments[4])
      case "produce-threads" where arguments.count == 6 || arguments.count == 7:
        try produceThreads(
          group: arguments[1], producer: Int(arguments[2])!, threads: Int(arguments[3])!,
          count: Int(arguments[4])!, log: arguments[5],
          padding: arguments.count == 7 ? Int(arguments[6])! : 0)
      case "consume" where arguments.count == 4 || arguments.count == 5:
        try consume(
          group: arguments[1], log: arguments[2], expected: Int(arguments[3])!,
          deliveredIDCapacity: arguments.count == 5 ? Int(arguments[4])! : nil)
      case "produce-forked" where arguments.count == 2:
        try produceForked(group: arguments[1])
      case "share-loop" where arguments.count == 4:
        try shareLoop(group: arguments[1], count: Int(arguments[2])!, drain: arguments[3] == "1")
      case "defaults-write" where arguments.count == 4:
        try writeDefaults(
          group: arguments[1], writer: Int(arguments[2])!, count: Int(arguments[3])!)
      default:
        FileHandle.standardError.write(
          Data(
            "usage: appgroups-stress produce|produce-threads|consume|share-loop|defaults-write …\n"
              .utf8))
        exit(64)
      }
    } catch {
      FileHandle.standardError.write(Data("appgroups-stress: \(error)\n".utf8))
      exit(1)
    }
  }

  /// The payload for an id: the id's bytes repeated to a length that depends on the id.
  static func payload(for id: String) -> [UInt8] {
    let seed = Array(id.utf8)
    let length = 64 + Int(seed.reduce(UInt32(7)) { $0 &* 31 &+ UInt32($1) } % 3000)
    return (0..<length).map { seed[$0 % seed.count] }
  }

  /// A producer that forks without exec, and whose child enqueues on the inherited spool.
  ///
  /// Enqueues `before`, forks a child that enqueues `child` and exits, then enqueues
  /// `parent`: the child must not append where the parent appends next. Exits 1 when the
  /// child failed.
  static func produceForked(group: String) throws {
    let spool = try Spool(container: GroupContainer(identifier: group))
    try spool.enqueue(payload: [1, 1, 1], id: "before")
    let child = fork()
    if child == 0 {
      do {
        try spool.enqueue(payload: [2, 2, 2], id: "child")
        _exit(0)
      } catch {
        _exit(1)
      }
    }
    var status: CInt = 0
    guard child > 0, waitpid(child, &status, 0) == child, status == 0 else { exit(1) }
    try spool.enqueue(payload: [3, 3, 3], id: "parent")
  }

  static func produce(group: String, producer: Int, count: Int, log: String) throws {
    let spool = try Spool(container: GroupContainer(identifier: group))
    let committed = try Log(path: log)
    for index in 0..<count {
      let id = "p\(producer)-\(index)"
      var attachments: [SpoolAttachment] = []
      if index % 10 == 0 {
        attachments.append(.data(Data(payload(for: id + "-a")), name: "attachment.bin"))
      }
      try spool.enqueue(payload: payload(for: id), attachments: attachments, id: id)
      committed.append(id)
    }
  }

  /// `threads` threads of one process enqueueing `count` entries each at the same time (ids
  /// `p<producer>-t<thread>-<index>`), so they share the fsync of `new/`.
  ///
  /// `padding` zero bytes are appended to each payload.
  static func produceThreads(
    group: String, producer: Int, threads: Int, count: Int, log: String, padding: Int
  ) throws {
    let spool = try Spool(container: GroupContainer(identifier: group))
    let committed = try Log(path: log)
    let failed = Mutex(false)
    // Threads of their own: Dispatch would run no more at once than there are cores.
    let done = DispatchGroup()
    for thread in 0..<threads {
      done.enter()
      Thread.detachNewThread {
        defer { done.leave() }
        for index in 0..<count {
          let id = "p\(producer)-t\(thread)-\(index)"
          do {
            try spool.enqueue(
              payload: payload(for: id) + [UInt8](repeating: 0, count: padding), id: id)
          } catch {
            FileHandle.standardError.write(Data("appgroups-stress: \(error)\n".utf8))
            failed.withLock { $0 = true }
            return
          }
          committed.append(id)
        }
      }
    }
    done.wait()
    if failed.withLock({ $0 }) { exit(1) }
  }

  static func consume(group: String, log: String, expected: Int, deliveredIDCapacity: Int?)
    throws
  {
    var limits = SpoolLimits()
    if let deliveredIDCapacity { limits.deliveredIDCapacity = deliveredIDCapacity }
    let spool = try Spool(container: GroupContainer(identifier: group), limits: limits)
    let delivered = try Log(path: log)
    var seen = Set<String>()
    while seen.count < expected {
      let summary = try spool.drain { entry in
        var good = entry.payload == payload(for: entry.id)
        let index = entry.id.split(separator: "-").last.flatMap { Int($0) } ?? -1
        good = good && entry.attachments.count == (index % 10 == 0 ? 1 : 0)
        for attachment in entry.attachments {
          let bytes = try [UInt8](Data(contentsOf: attachment.url))
          good = good && bytes == payload(for: entry.id + "-a")
        }
        delivered.append(good ? entry.id : "BAD \(entry.id)")
        seen.insert(entry.id)
      }
      for error in summary.setAside { delivered.append("CORRUPT \(error.message)") }
      if summary.delivered == 0 { usleep(2000) }
    }
  }

  /// A producer and a long-lived consumer in one process, one share at a time.
  ///
  /// Enqueues one entry, then (with `drain`) drains it: for counting a drain's system calls
  /// per share (`strace -f -c`, the run with `drain` minus the run without, over `count`).
  static func shareLoop(group: String, count: Int, drain: Bool) throws {
    let container = try GroupContainer(identifier: group)
    let producer = try Spool(container: container)
    let consumer = try Spool(container: container)
    var delivered = 0
    for index in 0..<count {
      let id = "share-\(index)"
      try producer.enqueue(payload: payload(for: id), id: id)
      if drain {
        try consumer.drain { entry in
          guard entry.payload == payload(for: entry.id) else {
            throw CocoaError(.fileReadCorruptFile)
          }
          delivered += 1
        }
      }
    }
    guard !drain || delivered == count else { throw CocoaError(.fileReadCorruptFile) }
  }

  static func writeDefaults(group: String, writer: Int, count: Int) throws {
    let defaults = try SharedDefaults(suiteName: group)
    for index in 0..<count {
      try defaults.set(index, forKey: "w\(writer)-\(index)")
    }
  }
}

/// An append-only line log; `write(2)` with `O_APPEND` keeps lines whole across processes.
final class Log: Sendable {
  let descriptor: CInt

  init(path: String) throws {
    descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno)!) }
  }

  func append(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
  }
}
