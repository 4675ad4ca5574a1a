import Synchronization

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
