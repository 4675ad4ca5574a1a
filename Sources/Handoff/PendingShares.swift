/// The shares of a ``PendingImporter`` as an `AsyncSequence`; see
/// ``PendingImporter/shares()``.
public struct PendingShares: AsyncSequence, Sendable {
  /// A share.
  public typealias Element = ReceivedShare
  let importer: PendingImporter

  /// Starts draining.
  public func makeAsyncIterator() -> Iterator { Iterator(importer: importer) }

  /// Hands shares over one at a time, acknowledging each when the next is asked for.
  public final class Iterator: AsyncIteratorProtocol {
    private let channel = ShareChannel()
    private let importer: PendingImporter
    private var task: Task<Void, Never>?

    init(importer: PendingImporter) { self.importer = importer }

    deinit {
      channel.close()
      task?.cancel()
    }

    /// The next share, acknowledging the previous one.
    ///
    /// - Throws: ``HandoffError`` when the registration or the spool fails.
    public func next() async throws -> ReceivedShare? {
      if task == nil {
        let channel = channel
        let importer = importer
        task = Task {
          do {
            try await importer.run { share in try await channel.offer(share) }
            channel.finish(nil)
          } catch {
            channel.finish(error)
          }
        }
      }
      let channel = channel
      return try await withTaskCancellationHandler {
        try await channel.take()
      } onCancel: {
        channel.close()
      }
    }
  }
}
