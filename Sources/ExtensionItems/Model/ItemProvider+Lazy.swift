public import Foundation

extension ItemProvider {
  /// Registers `type` with a handler that produces the payload when it is loaded
  /// (`registerItem(forTypeIdentifier:loadHandler:)`).
  ///
  /// The handler is not run now. Each load of this representation runs it once, in a new
  /// task on the global concurrent executor (never on the caller's actor), and the load
  /// takes its first call of `completion`: a payload, or an error (which wins when both are
  /// given). Later calls are ignored. A handler that never calls `completion` holds its load
  /// until the load's task is cancelled (an ``ExtensionContext`` cancels every load of its
  /// request at its time limit); the handler's task is cancelled then too. The payload may be
  /// any kind; a load asking for another kind coerces it as ``ItemCoercion`` says.
  ///
  /// - Returns: `false`, leaving the provider unchanged, when the type is already registered.
  @discardableResult
  public mutating func registerItem(
    for type: UniformType, visibility: ItemRepresentation.Visibility = .all,
    loadHandler:
      @escaping @Sendable (
        _ completion: @escaping @Sendable (ItemRepresentation.Content?, (any Error)?) -> Void
      ) -> Void
  ) -> Bool {
    register(
      LazyRepresentation(
        type: type, visibility: visibility, promisedKind: nil,
        loader: ItemLoader { complete in
          loadHandler { content, error in complete(Self.result(content, error, type)) }
        }))
  }

  /// Registers `type` with an async handler that produces the payload when it is loaded.
  ///
  /// As ``registerItem(for:visibility:loadHandler:)``, with the handler's return or throw as
  /// its completion; the handler sees `Task.isCancelled` when its load is cancelled.
  @discardableResult
  public mutating func registerItem(
    for type: UniformType, visibility: ItemRepresentation.Visibility = .all,
    load: @escaping @Sendable () async throws -> ItemRepresentation.Content
  ) -> Bool {
    register(
      LazyRepresentation(
        type: type, visibility: visibility, promisedKind: nil,
        loader: ItemLoader { complete in
          do { complete(.success(try await load())) } catch { complete(.failure(error)) }
        }))
  }

  /// Registers `type` with a handler that produces its bytes when it is loaded
  /// (`registerDataRepresentation(forTypeIdentifier:visibility:loadHandler:)`).
  ///
  /// As ``registerItem(for:visibility:loadHandler:)``; the payload is always inline data.
  @discardableResult
  public mutating func registerDataRepresentation(
    for type: UniformType, visibility: ItemRepresentation.Visibility = .all,
    loadHandler:
      @escaping @Sendable (
        _ completion: @escaping @Sendable (Data?, (any Error)?) -> Void
      ) -> Void
  ) -> Bool {
    register(
      LazyRepresentation(
        type: type, visibility: visibility, promisedKind: .data,
        loader: ItemLoader { complete in
          loadHandler { data, error in complete(Self.result(data.map { .data($0) }, error, type)) }
        }))
  }

  /// Registers `type` with an async handler that produces its bytes when it is loaded.
  @discardableResult
  public mutating func registerDataRepresentation(
    for type: UniformType, visibility: ItemRepresentation.Visibility = .all,
    load: @escaping @Sendable () async throws -> Data
  ) -> Bool {
    register(
      LazyRepresentation(
        type: type, visibility: visibility, promisedKind: .data,
        loader: ItemLoader { complete in
          do { complete(.success(.data(try await load()))) } catch { complete(.failure(error)) }
        }))
  }

  private static func result(
    _ content: ItemRepresentation.Content?, _ error: (any Error)?, _ type: UniformType
  ) -> Result<ItemRepresentation.Content, any Error> {
    if let error { return .failure(error) }
    guard let content else {
      return .failure(
        ItemProviderError(.itemUnavailable, "it completed with neither a payload nor an error"))
    }
    return .success(content)
  }

  // MARK: Loading

  /// Loads the first registration conforming to `type`, eager or lazy
  /// (`loadItem(forTypeIdentifier:options:completionHandler:)`).
  ///
  /// A lazy registration's handler runs once for this load; cancelling the calling task
  /// ends the load with ``ItemProviderError/Code/cancelled``.
  ///
  /// - Parameters:
  ///   - type: The requested type; the first registration that conforms to it is used.
  ///   - kind: The kind of payload wanted, coerced as ``ItemCoercion`` says; `nil` returns
  ///     the payload as registered (or as the handler produced it).
  ///   - baseDirectory: The directory relative file references are resolved against.
  ///   - temporaryDirectory: Where data or text requested as a file is written.
  ///   - registry: The type graph used for conformance.
  public func loadItem(
    for type: UniformType, as kind: ItemRepresentation.Kind? = nil, baseDirectory: URL? = nil,
    temporaryDirectory: URL = FileManager.default.temporaryDirectory,
    registry: UniformTypeRegistry = .system
  ) async throws(ItemProviderError) -> ItemRepresentation.Content {
    let representation: ItemRepresentation
    switch registration(conformingTo: type, in: registry) {
    case .eager(let eager)?:
      representation = eager
    case .lazy(let lazy)?:
      representation = ItemRepresentation(
        type: lazy.type, visibility: lazy.visibility, content: try await lazy.load())
    case nil:
      throw unavailable(type)
    }
    guard let kind else { return representation.content }
    return try coerce(
      representation, requested: type, to: kind, baseDirectory: baseDirectory,
      temporaryDirectory: temporaryDirectory, registry: registry)
  }

  /// Loads the first registration conforming to `type` as bytes, eager or lazy
  /// (`loadDataRepresentation(for:)`).
  public func loadDataRepresentation(
    for type: UniformType, baseDirectory: URL? = nil, registry: UniformTypeRegistry = .system
  ) async throws(ItemProviderError) -> Data {
    let content = try await loadItem(
      for: type, as: .data, baseDirectory: baseDirectory, registry: registry)
    guard case .data(let data) = content else { preconditionFailure("coerced to data") }
    return data
  }

  /// Loads the first registration conforming to `type` as a file, eager or lazy
  /// (`loadFileRepresentation(for:)`); see ``loadFile(for:baseDirectory:temporaryDirectory:registry:)``
  /// for who owns the file.
  public func loadFileRepresentation(
    for type: UniformType, baseDirectory: URL? = nil,
    temporaryDirectory: URL = FileManager.default.temporaryDirectory,
    registry: UniformTypeRegistry = .system
  ) async throws(ItemProviderError) -> URL {
    let content = try await loadItem(
      for: type, as: .file, baseDirectory: baseDirectory,
      temporaryDirectory: temporaryDirectory, registry: registry)
    guard case .file(let path) = content else { preconditionFailure("coerced to a file") }
    return Self.resolve(path, against: baseDirectory)
  }

  /// This provider with every lazy representation loaded.
  ///
  /// Each handler runs once, all of them concurrently, and each becomes an
  /// ``ItemRepresentation`` of the payload it produced, in its place in the registration
  /// order. A provider with nothing lazy is returned as is.
  ///
  /// - Throws: ``ItemProviderError`` of the first load that failed; the others are
  ///   cancelled then.
  public func loaded() async throws(ItemProviderError) -> ItemProvider {
    guard hasLazyRepresentations else { return self }
    return replacingLazy(with: try await Self.loadAll(lazyRepresentations).mapError(\.error).get())
  }

  /// This provider with every lazy representation's loads run through `transform`.
  package func mappingLazyLoads(_ transform: @escaping LazyRepresentation.LoadTransform)
    -> ItemProvider
  {
    guard hasLazyRepresentations else { return self }
    var copy = self
    copy.lazyRepresentations = lazyRepresentations.map { $0.mappingLoad(transform) }
    return copy
  }

  /// This provider with its lazy representations replaced, in order, by `contents`.
  fileprivate func replacingLazy(with contents: [ItemRepresentation.Content]) -> ItemProvider {
    var provider = ItemProvider()
    provider.suggestedName = suggestedName
    provider.preferredPresentationSize = preferredPresentationSize
    var next = contents.makeIterator()
    for registration in registrations {
      switch registration {
      case .eager(let representation):
        provider.register(representation)
      case .lazy(let lazy):
        provider.register(
          ItemRepresentation(type: lazy.type, visibility: lazy.visibility, content: next.next()!))
      }
    }
    return provider
  }

  /// A failed load among several: which one, and why.
  struct IndexedFailure: Error {
    var index: Int
    var error: ItemProviderError
  }

  /// Loads every representation concurrently; the first load to fail cancels the others
  /// and is the result.
  static func loadAll(_ lazy: [LazyRepresentation]) async
    -> Result<[ItemRepresentation.Content], IndexedFailure>
  {
    await withTaskGroup(
      of: (Int, Result<ItemRepresentation.Content, ItemProviderError>).self
    ) { group in
      for (index, representation) in lazy.enumerated() {
        group.addTask {
          do throws(ItemProviderError) {
            return (index, .success(try await representation.load()))
          } catch {
            return (index, .failure(error))
          }
        }
      }
      var contents = [ItemRepresentation.Content?](repeating: nil, count: lazy.count)
      for await (index, result) in group {
        switch result {
        case .success(let content):
          contents[index] = content
        case .failure(let error):
          group.cancelAll()
          return .failure(IndexedFailure(index: index, error: error))
        }
      }
      return .success(contents.map { $0! })
    }
  }
}

extension ExtensionItem {
  /// Whether some attachment has a lazy representation: the item must be ``loaded(_:)``
  /// before it can be encoded or stored.
  public var hasLazyRepresentations: Bool { attachments.contains(where: \.hasLazyRepresentations) }

  /// `items` with every lazy representation loaded, once each, all concurrently.
  ///
  /// See ``ItemProvider/loaded()``. Items with nothing lazy are returned as they are.
  ///
  /// - Throws: ``ItemProviderError`` of the first load that failed (the others are cancelled
  ///   then), its message prefixed with where the representation is
  ///   ("item 0, attachment 1: the load handler for public.jpeg failed: ...").
  public static func loaded(_ items: [ExtensionItem]) async throws(ItemProviderError)
    -> [ExtensionItem]
  {
    guard items.contains(where: \.hasLazyRepresentations) else { return items }
    var lazy: [LazyRepresentation] = []
    var places: [String] = []
    for (itemIndex, item) in items.enumerated() {
      for (index, provider) in item.attachments.enumerated() where provider.hasLazyRepresentations {
        lazy += provider.lazyRepresentations
        places += repeatElement(
          "item \(itemIndex), attachment \(index)", count: provider.lazyRepresentations.count)
      }
    }
    // One concurrent batch for all items; then each provider takes its payloads in order.
    let contents: [ItemRepresentation.Content]
    switch await ItemProvider.loadAll(lazy) {
    case .success(let loaded): contents = loaded
    case .failure(let failure):
      throw ItemProviderError(
        failure.error.code, "\(places[failure.index]): \(failure.error.message)")
    }
    var next = 0
    return items.map { item in
      var item = item
      item.attachments = item.attachments.map { provider in
        let count = provider.lazyRepresentations.count
        guard count > 0 else { return provider }
        defer { next += count }
        return provider.replacingLazy(with: Array(contents[next..<next + count]))
      }
      return item
    }
  }
}
