extension SharedDefaults {
  /// A change to shared defaults, made by any process.
  public struct Change: Sendable, Hashable {
    /// The keys whose persisted value was added, changed or removed.
    public var keys: Set<String>
  }

  /// Reports changes to the persisted values made by any process, this one included.
  ///
  /// The stream polls the file's change stamp (one `fstatat` per interval) and, when it
  /// moved, re-reads the file and reports the keys whose values differ. It uses no IPC,
  /// so it works between any processes that share the container; a doorbell from a
  /// higher layer can make a consumer look sooner. Changes that revert each other within
  /// one interval are not reported. The stream ends when the task iterating it is
  /// cancelled. A read error (such as a corrupt file) is skipped and retried at the next
  /// interval.
  ///
  /// - Parameter interval: How often to check the file; 250 ms by default.
  /// - Returns: A stream of changes, starting from the values when it was created.
  public func changes(pollingEvery interval: Duration = .milliseconds(250))
    -> AsyncStream<Change>
  {
    let initial = try? currentValues()
    let initialStamp = try? currentStamp()
    return AsyncStream(bufferingPolicy: .bufferingNewest(64)) { continuation in
      let task = Task { [self] in
        var last = initial ?? [:]
        var stamp = initialStamp
        while !Task.isCancelled {
          try? await Task.sleep(for: interval)
          let now: Stamp?
          do { now = try currentStamp() } catch { continue }
          guard now != stamp, let values = try? currentValues() else { continue }
          stamp = now
          let keys = Set(last.keys).union(values.keys).filter { last[$0] != values[$0] }
          last = values
          if !keys.isEmpty { continuation.yield(Change(keys: keys)) }
        }
        continuation.finish()
      }
      continuation.onTermination = { _ in task.cancel() }
    }
  }
}
