import Synchronization

extension PendingImporter {
  /// The shares as an asynchronous sequence: drained at start and on every post.
  ///
  /// A share is acknowledged (removed from the spool) when the loop asks for the next one.
  /// Leaving the loop by `break`, by an error or by cancellation leaves the current share in
  /// the spool, and the next drain delivers it again, so a crash never loses one.
  ///
  /// ```swift
  /// for try await share in importer.shares() {
  ///   try library.insert(share)
  /// }
  /// ```
  public func shares() -> PendingShares { PendingShares(importer: self) }
}

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

/// A rendezvous between the drain (producer) and the loop (consumer): the drain's handler
/// waits until the loop comes back for the next share, which acknowledges this one.
final class ShareChannel: Sendable {
  private struct State: ~Copyable {
    var consumer: CheckedContinuation<ReceivedShare?, any Error>?
    var offered: (share: ReceivedShare, producer: CheckedContinuation<Void, any Error>)?
    var awaitingAcknowledgement: CheckedContinuation<Void, any Error>?
    var closed = false
    var ended = false
    var failure: (any Error)?
  }
  private let state = Mutex(State())

  /// Offers a share and waits until the consumer acknowledges it (returns) or goes away
  /// (throws `CancellationError`, so the share stays in the spool).
  func offer(_ share: ReceivedShare) async throws {
    try await withCheckedThrowingContinuation { (producer: CheckedContinuation<Void, any Error>) in
      state.withLock { state in
        if state.closed {
          producer.resume(throwing: CancellationError())
        } else if let consumer = state.consumer {
          state.consumer = nil
          state.awaitingAcknowledgement = producer
          consumer.resume(returning: share)
        } else {
          state.offered = (share, producer)
        }
      }
    }
  }

  /// Acknowledges the previous share and waits for the next.
  func take() async throws -> ReceivedShare? {
    try await withCheckedThrowingContinuation {
      (consumer: CheckedContinuation<ReceivedShare?, any Error>) in
      state.withLock { state in
        state.awaitingAcknowledgement?.resume()
        state.awaitingAcknowledgement = nil
        if state.closed {
          consumer.resume(returning: nil)
        } else if let offered = state.offered {
          state.offered = nil
          state.awaitingAcknowledgement = offered.producer
          consumer.resume(returning: offered.share)
        } else if state.ended {
          if let failure = state.failure {
            state.failure = nil
            consumer.resume(throwing: failure)
          } else {
            consumer.resume(returning: nil)
          }
        } else {
          state.consumer = consumer
        }
      }
    }
  }

  /// The consumer went away: the share in hand stays in the spool.
  func close() {
    state.withLock { state in
      state.closed = true
      state.awaitingAcknowledgement?.resume(throwing: CancellationError())
      state.awaitingAcknowledgement = nil
      state.offered?.producer.resume(throwing: CancellationError())
      state.offered = nil
      state.consumer?.resume(returning: nil)
      state.consumer = nil
    }
  }

  /// The producer ended, with an error or because it was cancelled.
  func finish(_ error: (any Error)?) {
    state.withLock { state in
      state.ended = true
      if let consumer = state.consumer {
        state.consumer = nil
        if let error { consumer.resume(throwing: error) } else { consumer.resume(returning: nil) }
      } else {
        state.failure = error
      }
    }
  }
}
