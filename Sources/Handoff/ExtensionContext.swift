public import ExtensionItems
import Synchronization

/// The share extension's request, like `NSExtensionContext`: the items the host offered, and
/// one way to finish, completing (handing items to the app) or cancelling.
///
/// ```swift
/// let context = ExtensionContext(inputItems: items, sender: sender)
/// guard rule.evaluate(context.inputItems) else {
///   context.cancelRequest(withError: refusal)
///   return
/// }
/// try await context.completeRequest(returningItems: context.inputItems)
/// ```
///
/// On Apple systems `completeRequest(returningItems:)` hands its items back to the host app;
/// in the handoff the items go to the containing app instead, through the sender's spool
/// and doorbell, which is what share extensions do with the items they keep.
public final class ExtensionContext: Sendable {
  /// The items the host offered (`inputItems`).
  public let inputItems: [ExtensionItem]
  /// Where completed items go.
  public let sender: HandoffSender
  private let state = Mutex<Outcome?>(nil)

  /// How a request ended.
  public enum Outcome: Sendable {
    /// Completed; the share id is `nil` when no items were returned.
    case completed(shareID: String?)
    /// Cancelled, with the extension's reason.
    case cancelled(any Error)
  }

  /// Creates a request.
  ///
  /// - Parameters:
  ///   - inputItems: The offered items.
  ///   - sender: Where completed items go.
  public init(inputItems: [ExtensionItem], sender: HandoffSender) {
    self.inputItems = inputItems
    self.sender = sender
  }

  /// How the request ended, or `nil` while it is open.
  public var outcome: Outcome? { state.withLock { $0 } }

  /// Ends the request, handing `items` to the app: stored in the spool, then the doorbell.
  ///
  /// - Parameter items: The items to hand over; `nil` or empty hands over nothing.
  /// - Returns: The share id, or `nil` when nothing was handed over.
  /// - Throws: ``HandoffError``: ``HandoffError/Code/requestFinished`` when the request
  ///   already ended, or what ``HandoffSender/send(_:id:)`` throws (the request stays open
  ///   when nothing was stored, so it can be retried or cancelled).
  @discardableResult
  public func completeRequest(returningItems items: [ExtensionItem]?) async throws(HandoffError)
    -> String?
  {
    try checkOpen()
    var shareID: String?
    if let items, !items.isEmpty {
      do {
        shareID = try await sender.send(items)
      } catch  where error.code == .postFailed {
        // Stored: the app drains it at its next launch or doorbell. The request completed.
        state.withLock { $0 = .completed(shareID: nil) }
        throw error
      }
    }
    let finished = state.withLock { outcome in
      guard outcome == nil else { return false }
      outcome = .completed(shareID: shareID)
      return true
    }
    guard finished else { throw Self.finishedError }
    return shareID
  }

  /// Ends the request without handing anything over.
  ///
  /// - Parameter error: Why, as `cancelRequest(withError:)` takes it.
  /// - Throws: ``HandoffError`` with code ``HandoffError/Code/requestFinished`` when the
  ///   request already ended.
  public func cancelRequest(withError error: any Error) throws(HandoffError) {
    let cancelled = state.withLock { outcome in
      guard outcome == nil else { return false }
      outcome = .cancelled(error)
      return true
    }
    guard cancelled else { throw Self.finishedError }
  }

  private func checkOpen() throws(HandoffError) {
    guard outcome == nil else { throw Self.finishedError }
  }

  private static var finishedError: HandoffError {
    HandoffError(.requestFinished, "The extension request was already completed or cancelled.")
  }
}
