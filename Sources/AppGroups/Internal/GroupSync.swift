import Foundation

/// Shares one `fsync` of a directory among the threads of this process that changed it at
/// about the same time (group commit).
///
/// A caller that renamed an entry into the directory needs an `fsync` of the directory that
/// *started* after its rename returned: that one persists the rename. When a sync is already
/// running, it may have started before the rename, so the caller waits for it to end and
/// then for (or runs) the next one, which every caller that arrived meanwhile shares. With
/// one producer this is one `fsync` per call, as before; with n producers renaming at once
/// it is about two per burst instead of n.
final class GroupSync: @unchecked Sendable {
  // Safety of @unchecked Sendable: every stored property is read and written with
  // `condition` locked.
  private let condition = NSCondition()
  /// The number of syncs started so far; the generation of the latest.
  private var started: UInt64 = 0
  /// The generation of the latest sync that ended.
  private var finished: UInt64 = 0
  private var running = false
  /// Generations whose sync failed (kept until no caller can still ask about them).
  private var failed: [UInt64: ContainerError] = [:]
  /// With `poisonedByFailure`, the first failure, which every later call reports.
  private var poison: ContainerError?
  private let poisonedByFailure: Bool

  /// - Parameter poisonedByFailure: After a sync fails, fail every caller still waiting and
  ///   every later call without syncing again. For a file's `fdatasync`: Linux reports a
  ///   writeback error once per open file description, so a later sync that succeeds does
  ///   not mean the data the failed one covered reached the disk.
  init(poisonedByFailure: Bool = false) {
    self.poisonedByFailure = poisonedByFailure
  }

  /// Returns once an `fsync` (run by `body`) that started after this call began has
  /// succeeded: this caller's, or one shared with callers that arrived at the same time.
  ///
  /// - Throws: The error of that sync.
  func sync(_ body: () throws(ContainerError) -> Void) throws(ContainerError) {
    condition.lock()
    defer { condition.unlock() }
    // Syncs run one at a time and take generations in order, so the first to start after
    // this point is `needed`.
    let needed = started + 1
    while finished < needed {
      if let poison { throw poison }
      if running {
        condition.wait()
        continue
      }
      running = true
      started += 1
      let generation = started
      condition.unlock()
      var failure: ContainerError?
      do { try body() } catch { failure = error }
      condition.lock()
      running = false
      finished = generation
      if let failure {
        failed[generation] = failure
        if poisonedByFailure, poison == nil {
          poison = failure
          poison!.message +=
            " Records written before it may not be on disk; nothing more is "
            + "appended to this file by this process."
        }
      }
      // Callers waiting for an older generation have all woken by now.
      if !failed.isEmpty { failed = failed.filter { $0.key + 1024 > generation } }
      condition.broadcast()
    }
    if let failure = failed[needed] { throw failure }
  }
}
