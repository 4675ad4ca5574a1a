import Synchronization

/// A registered form of a provider's payload that a load handler produces on demand: what
/// `registerItem(forTypeIdentifier:loadHandler:)` and
/// `registerDataRepresentation(forTypeIdentifier:visibility:loadHandler:)` register on
/// `NSItemProvider`.
///
/// Nothing is loaded when the representation is registered, checked against an activation
/// rule or asked about with ``ItemProvider/hasItemConforming(to:in:)``: its type alone
/// answers those. The handler runs only when a consumer loads this representation
/// (``ItemProvider/loadItem(for:as:baseDirectory:temporaryDirectory:registry:)`` and its
/// typed forms), and once for each such load; ``ItemProvider/loaded()`` runs it once to turn
/// the representation into an ``ItemRepresentation`` that can be encoded or stored.
///
/// Two lazy representations are equal when they have the same type, visibility and promised
/// kind and share one registration (copies of a provider share it).
public struct LazyRepresentation: Hashable, Sendable {
  /// The type of the payload the handler produces, for example `public.jpeg`.
  public let type: UniformType
  /// Which processes may see the representation.
  public let visibility: ItemRepresentation.Visibility
  /// The kind of payload the handler promises: ``ItemRepresentation/Kind/data`` for a data
  /// representation, `nil` for an item handler, which may produce any kind.
  public let promisedKind: ItemRepresentation.Kind?
  let loader: ItemLoader

  /// Runs the handler once and returns the payload it produced.
  ///
  /// - Throws: ``ItemProviderError`` naming ``type``: the handler's failure (its code when it
  ///   threw an ``ItemProviderError``, else ``ItemProviderError/Code/unknown``),
  ///   ``ItemProviderError/Code/itemUnavailable`` when it completed with neither a payload
  ///   nor an error, ``ItemProviderError/Code/cancelled`` when the load's task was
  ///   cancelled before the handler completed.
  public func load() async throws(ItemProviderError) -> ItemRepresentation.Content {
    try await loader.load(type)
  }

  /// One load of a registration.
  package typealias Load =
    @Sendable () async throws(ItemProviderError) ->
    ItemRepresentation.Content
  /// Runs a registration's load (of the given type) in some other way, calling it at most
  /// once.
  package typealias LoadTransform =
    @Sendable (_ type: UniformType, _ load: @escaping Load)
    async throws(ItemProviderError) -> ItemRepresentation.Content

  /// The same registration, its loads run through `transform`; used to tie loads to an
  /// extension request's time limit.
  package func mappingLoad(_ transform: @escaping LoadTransform) -> LazyRepresentation {
    let inner = loader
    let type = self.type
    return LazyRepresentation(
      type: type, visibility: visibility, promisedKind: promisedKind,
      loader: ItemLoader(wrapping: { () async throws(ItemProviderError) in
        try await transform(type) { () async throws(ItemProviderError) in
          try await inner.load(type)
        }
      }))
  }

  public static func == (lhs: LazyRepresentation, rhs: LazyRepresentation) -> Bool {
    lhs.type == rhs.type && lhs.visibility == rhs.visibility
      && lhs.promisedKind == rhs.promisedKind && lhs.loader === rhs.loader
  }

  public func hash(into hasher: inout Hasher) {
    hasher.combine(type)
    hasher.combine(ObjectIdentifier(loader))
  }
}

/// Runs one registration's load handler: once per load, on the global concurrent executor,
/// with its completion taken at most once and the load ended by cancellation even when the
/// handler never completes.
final class ItemLoader: Sendable {
  /// What a handler is given to report its payload; later calls are ignored.
  typealias Completion = @Sendable (Result<ItemRepresentation.Content, any Error>) -> Void

  private enum Body: Sendable {
    /// A handler that reports through a completion (the completion-handler forms, and the
    /// async forms adapted to one).
    case handler(@Sendable (_ complete: @escaping Completion) async -> Void)
    /// Another loader's load, transformed (``LazyRepresentation/mappingLoad(_:)``).
    case wrapped(LazyRepresentation.Load)
  }

  private let body: Body

  init(_ handler: @escaping @Sendable (_ complete: @escaping Completion) async -> Void) {
    body = .handler(handler)
  }

  init(wrapping load: @escaping LazyRepresentation.Load) {
    body = .wrapped(load)
  }

  func load(_ type: UniformType) async throws(ItemProviderError) -> ItemRepresentation.Content {
    switch body {
    case .wrapped(let load):
      return try await load()
    case .handler(let handler):
      return try await Self.run(handler, type: type).get()
    }
  }

  /// One load: the handler starts in a new task; the first of its completion and the
  /// caller's cancellation ends the load, and cancellation also cancels the handler's task.
  private static func run(
    _ handler: @escaping @Sendable (_ complete: @escaping Completion) async -> Void,
    type: UniformType
  ) async -> Result<ItemRepresentation.Content, ItemProviderError> {
    let load = PendingLoad()
    return await withTaskCancellationHandler {
      await withCheckedContinuation { continuation in
        guard load.start(continuation) else { return }
        let task = Task.detached {
          await handler { result in load.finish(result.mapError { failure(type, $0) }) }
        }
        load.attach(task)
      }
    } onCancel: {
      load.finish(
        .failure(ItemProviderError(.cancelled, "loading \(type) was cancelled")), cancelling: true)
    }
  }

  /// A handler's failure as an ``ItemProviderError`` naming the type.
  private static func failure(_ type: UniformType, _ error: any Error) -> ItemProviderError {
    if let error = error as? ItemProviderError {
      return ItemProviderError(error.code, "the load handler for \(type) failed: \(error.message)")
    }
    if error is CancellationError {
      return ItemProviderError(.cancelled, "the load handler for \(type) was cancelled")
    }
    return ItemProviderError(.unknown, "the load handler for \(type) failed: \(error)")
  }
}

/// The state of one load: its continuation, resumed exactly once, and the handler's task.
private final class PendingLoad: Sendable {
  typealias LoadResult = Result<ItemRepresentation.Content, ItemProviderError>

  private struct State {
    var continuation: CheckedContinuation<LoadResult, Never>?
    var result: LoadResult?
    var task: Task<Void, Never>?
    var cancelTask = false
  }
  private let state = Mutex(State())

  /// Installs the continuation; `false` when the load already ended (cancelled before it
  /// started), in which case the continuation has been resumed.
  func start(_ continuation: CheckedContinuation<LoadResult, Never>) -> Bool {
    let ended: LoadResult? = state.withLock {
      if let result = $0.result { return result }
      $0.continuation = continuation
      return nil
    }
    guard let ended else { return true }
    continuation.resume(returning: ended)
    return false
  }

  func attach(_ task: Task<Void, Never>) {
    let cancel = state.withLock {
      $0.task = task
      return $0.cancelTask
    }
    if cancel { task.cancel() }
  }

  /// Ends the load with `result` unless it already ended; a second completion is ignored.
  func finish(_ result: LoadResult, cancelling: Bool = false) {
    let (continuation, task) = state.withLock {
      state -> (CheckedContinuation<LoadResult, Never>?, Task<Void, Never>?) in
      if cancelling { state.cancelTask = true }
      guard state.result == nil else { return (nil, nil) }
      state.result = result
      defer { state.continuation = nil }
      return (state.continuation, cancelling ? state.task : nil)
    }
    task?.cancel()
    continuation?.resume(returning: result)
  }
}
