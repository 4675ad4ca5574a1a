public import ExtensionItems
public import Foundation
import Synchronization

/// The share extension's request, like `NSExtensionContext`: the items the host offered, a
/// time limit, and one way to finish, completing (handing items to the app) or cancelling.
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
///
/// ## The time limit
///
/// A share extension has about 30 seconds before the system kills it. A request here has
/// ``timeLimit`` (``defaultTimeLimit`` unless given), counted from the context's creation.
/// When it passes while the request is open, the request is cancelled: ``outcome`` becomes
/// ``Outcome/cancelled(_:)`` with a ``HandoffError/Code/timedOut`` error, every lazy load
/// of ``inputItems`` in flight ends with ``ItemProviderError/Code/cancelled`` (and later
/// ones fail so at once), a ``completeRequest(returningItems:)`` still loading throws
/// ``HandoffError/Code/timedOut``, and nothing is stored. The deadline is checked again
/// when storing begins. Once the items are loaded and their one atomic spool entry is being
/// written, the request completes: the spool never holds part of a share. The example tools take the limit from
/// ``timeLimitEnvironmentVariable`` (``timeLimit(fromEnvironment:)``).
public final class ExtensionContext: Sendable {
  /// The items the host offered (`inputItems`).
  ///
  /// Their lazy representations load within this request: at its time limit, their loads
  /// are cancelled.
  public let inputItems: [ExtensionItem]
  /// Where completed items go.
  public let sender: HandoffSender
  /// How long the request may stay open.
  public let timeLimit: Duration
  /// When the request is cancelled if it is still open: creation plus ``timeLimit``.
  public let deadline: ContinuousClock.Instant
  private let scope: LoadScope
  private let state = Mutex<Phase>(.open)
  private let timer = Mutex<Task<Void, Never>?>(nil)

  /// The time limit when none is given: 30 seconds, about what iOS grants a share
  /// extension.
  public static var defaultTimeLimit: Duration { .seconds(30) }
  /// The environment variable the example tools read the time limit from, in seconds
  /// (`NOTIFYBUS_EXTENSION_TIME_LIMIT=2.5`).
  public static var timeLimitEnvironmentVariable: String { "NOTIFYBUS_EXTENSION_TIME_LIMIT" }

  /// How a request ended.
  public enum Outcome: Sendable {
    /// Completed; the share id is `nil` when no items were returned.
    case completed(shareID: String?)
    /// Cancelled, with the extension's reason, or a ``HandoffError/Code/timedOut`` error
    /// when the time limit passed.
    case cancelled(any Error)
  }

  private enum Phase: Sendable {
    case open
    /// ``completeRequest(returningItems:)`` is writing the share: too late to cancel.
    case storing
    case ended(Outcome)
  }

  /// Creates a request; its time limit starts now.
  ///
  /// - Parameters:
  ///   - inputItems: The offered items.
  ///   - sender: Where completed items go.
  ///   - timeLimit: How long the request may stay open; ``defaultTimeLimit`` by default.
  public init(
    inputItems: [ExtensionItem], sender: HandoffSender, timeLimit: Duration = defaultTimeLimit
  ) {
    let scope = LoadScope(timeLimit: timeLimit)
    self.scope = scope
    self.inputItems = inputItems.map { item in
      var item = item
      item.attachments = item.attachments.map { provider in
        provider.mappingLazyLoads { type, load throws(ItemProviderError) in
          try await scope.perform(type, load)
        }
      }
      return item
    }
    self.sender = sender
    self.timeLimit = timeLimit
    deadline = .now + timeLimit
    let deadline = deadline
    let task = Task { [weak self] in
      guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
      self?.expire()
    }
    timer.withLock { $0 = task }
  }

  deinit {
    timer.withLock { $0?.cancel() }
  }

  /// How the request ended, or `nil` while it is open.
  public var outcome: Outcome? {
    state.withLock {
      if case .ended(let outcome) = $0 { return outcome }
      return nil
    }
  }

  /// Ends the request, handing `items` to the app: their lazy representations are loaded
  /// (each handler once, within the time limit), the items are stored in the spool, then
  /// the doorbell is rung.
  ///
  /// - Parameter items: The items to hand over; `nil` or empty hands over nothing.
  /// - Returns: The share id, or `nil` when nothing was handed over.
  /// - Throws: ``HandoffError``: ``HandoffError/Code/requestFinished`` when the request
  ///   already ended (or is completing); ``HandoffError/Code/timedOut`` when the time limit
  ///   passed first (the request is then cancelled and nothing is stored);
  ///   ``HandoffError/Code/loadFailed`` naming the type whose handler failed, or what
  ///   ``HandoffSender/send(_:id:)`` throws (in both cases nothing was stored and the
  ///   request stays open, so it can be retried or cancelled).
  @discardableResult
  public func completeRequest(returningItems items: [ExtensionItem]?) async throws(HandoffError)
    -> String?
  {
    try checkOpen()
    var loaded = items ?? []
    do {
      if loaded.contains(where: \.hasLazyRepresentations) {
        loaded = try await scope.perform(nil) { [loaded] () throws(ItemProviderError) in
          try await ExtensionItem.loaded(loaded)
        }
      }
    } catch {
      if let timedOut = scope.timedOutError { throw timedOut }
      if scope.isCancelled { throw Self.finishedError }
      throw HandoffError(
        .loadFailed, "Cannot load the shared items: \(error.message)", cause: .provider(error))
    }
    try begin()
    var shareID: String?
    if !loaded.isEmpty {
      do {
        shareID = try await sender.send(loaded)
      } catch  where error.code == .postFailed {
        // Stored: the app drains it at its next launch or doorbell. The request completed.
        end(.completed(shareID: nil))
        throw error
      } catch {
        state.withLock { $0 = .open }
        throw error
      }
    }
    end(.completed(shareID: shareID))
    return shareID
  }

  /// Ends the request without handing anything over; lazy loads of ``inputItems`` in
  /// flight are cancelled.
  ///
  /// - Parameter error: Why, as `cancelRequest(withError:)` takes it.
  /// - Throws: ``HandoffError`` with code ``HandoffError/Code/requestFinished`` when the
  ///   request already ended or is completing.
  public func cancelRequest(withError error: any Error) throws(HandoffError) {
    let cancelled = state.withLock { phase in
      guard case .open = phase else { return false }
      phase = .ended(.cancelled(error))
      return true
    }
    guard cancelled else { throw Self.finishedError }
    scope.cancel(timedOut: false)
    timer.withLock { $0?.cancel() }
  }

  /// Reads the time limit from ``timeLimitEnvironmentVariable``: a positive number of
  /// seconds (`30`, `2.5`) of at most a day, or ``defaultTimeLimit`` when it is unset or
  /// empty.
  ///
  /// - Throws: ``HandoffError`` with code ``HandoffError/Code/invalidTimeLimit`` naming the
  ///   variable and its value.
  public static func timeLimit(
    fromEnvironment environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(HandoffError) -> Duration {
    guard let text = environment[timeLimitEnvironmentVariable], !text.isEmpty else {
      return defaultTimeLimit
    }
    let isDecimal = text.allSatisfy { $0.isASCII && ($0.isNumber || $0 == ".") }
    guard isDecimal, let seconds = Double(text), seconds > 0, seconds <= 86_400 else {
      throw HandoffError(
        .invalidTimeLimit,
        "\(timeLimitEnvironmentVariable)=\(text) is not a time limit: give a positive number "
          + "of seconds, at most 86400, such as 30 or 2.5")
    }
    return .milliseconds(Int64((seconds * 1000).rounded(.up)))
  }

  // MARK: Phases

  private func checkOpen() throws(HandoffError) {
    expireIfDue()
    let phase = state.withLock { $0 }
    if case .open = phase { return }
    if case .ended(.cancelled(let error as HandoffError)) = phase, error.code == .timedOut {
      throw error
    }
    throw Self.finishedError
  }

  /// From open to storing: past this point the time limit no longer cancels the request.
  private func begin() throws(HandoffError) {
    expireIfDue()
    let phase: Phase = state.withLock { phase in
      let before = phase
      if case .open = phase { phase = .storing }
      return before
    }
    guard case .open = phase else {
      if let timedOut = scope.timedOutError { throw timedOut }
      throw Self.finishedError
    }
  }

  private func end(_ outcome: Outcome) {
    state.withLock { $0 = .ended(outcome) }
    timer.withLock { $0?.cancel() }
  }

  /// Expires the request now if its deadline passed and the timer has not run yet.
  private func expireIfDue() {
    if ContinuousClock.now >= deadline { expire() }
  }

  /// The time limit passed: cancel the request if it is open, and every load.
  private func expire() {
    // The outcome first, so a completeRequest whose loads this cancels sees it.
    let error = scope.timedOut
    state.withLock { phase in
      if case .open = phase { phase = .ended(.cancelled(error)) }
    }
    scope.cancel(timedOut: true)
  }

  private static var finishedError: HandoffError {
    HandoffError(.requestFinished, "The extension request was already completed or cancelled.")
  }
}

/// The lazy loads of one extension request: each runs in its own task, which the scope
/// cancels when the request ends or passes its time limit.
private final class LoadScope: Sendable {
  private struct State {
    var loads: [UInt64: Task<Void, Never>] = [:]
    var next: UInt64 = 0
    /// Set when the request was cancelled: by its time limit (`true`) or by the extension.
    var cancelled: Bool?
  }
  private let state = Mutex(State())
  let timeLimit: Duration

  init(timeLimit: Duration) { self.timeLimit = timeLimit }

  /// Whether the request was cancelled, by its time limit or by the extension.
  var isCancelled: Bool { state.withLock { $0.cancelled != nil } }

  /// The error of a request that passed its time limit, or `nil`.
  var timedOutError: HandoffError? {
    state.withLock { $0.cancelled == true } ? timedOut : nil
  }

  /// The error of a request that passed its time limit.
  var timedOut: HandoffError {
    HandoffError(
      .timedOut,
      "The extension request passed its time limit of \(Self.seconds(timeLimit)) s and was "
        + "cancelled; nothing was stored.")
  }

  /// Cancels every load in flight, and makes later ones fail at once.
  func cancel(timedOut: Bool) {
    let loads = state.withLock { state in
      if state.cancelled == nil { state.cancelled = timedOut }
      defer { state.loads = [:] }
      return Array(state.loads.values)
    }
    for load in loads { load.cancel() }
  }

  /// Runs `body` in a task this scope cancels when the request ends; the caller's
  /// cancellation cancels it too.
  func perform<T: Sendable>(
    _ type: UniformType?, _ body: @escaping @Sendable () async throws(ItemProviderError) -> T
  ) async throws(ItemProviderError) -> T {
    let result = Mutex<Result<T, ItemProviderError>?>(nil)
    let task = Task {
      do throws(ItemProviderError) {
        let value = try await body()
        result.withLock { $0 = .success(value) }
      } catch {
        result.withLock { $0 = .failure(error) }
      }
    }
    let id: UInt64? = state.withLock { state in
      guard state.cancelled == nil else { return nil }
      state.next += 1
      state.loads[state.next] = task
      return state.next
    }
    if id == nil { task.cancel() }
    await withTaskCancellationHandler {
      await task.value
    } onCancel: {
      task.cancel()
    }
    if let id { _ = state.withLock { $0.loads.removeValue(forKey: id) } }
    let outcome = result.withLock { $0 }!
    if case .failure(let error) = outcome, error.code == .cancelled,
      let cancelled = state.withLock({ $0.cancelled })
    {
      let why =
        cancelled
        ? "the extension request passed its time limit of \(Self.seconds(timeLimit)) s"
        : "the extension request was cancelled"
      let what = type.map { "loading \($0)" } ?? "loading the items"
      throw ItemProviderError(.cancelled, "\(what) was cancelled: \(why)")
    }
    return try outcome.get()
  }

  static func seconds(_ duration: Duration) -> String {
    let (seconds, attoseconds) = duration.components
    let value = Double(seconds) + Double(attoseconds) / 1e18
    return value.rounded() == value ? String(Int64(value)) : String(value)
  }
}
