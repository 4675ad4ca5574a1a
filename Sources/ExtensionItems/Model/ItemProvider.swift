public import Foundation

/// A payload offered in one or more forms: the `NSItemProvider` of an item's attachment.
///
/// Representations keep registration order, highest fidelity first, and a type can be
/// registered only once: registering it again is ignored, as `registerObject:visibility:`
/// ignores duplicates. Alternative formats of one thing belong in one provider; several
/// things belong in several providers of one ``ExtensionItem``.
///
/// A type is registered either with its payload at hand (an ``ItemRepresentation``) or with
/// a load handler that produces the payload when a consumer asks for it (a
/// ``LazyRepresentation``, `registerItem(forTypeIdentifier:loadHandler:)`); see
/// ``registerItem(for:visibility:loadHandler:)``. ``registeredTypes`` lists both kinds in
/// one registration order.
public struct ItemProvider: Hashable, Sendable {
  /// The representations whose payload is at hand, in registration order.
  public private(set) var representations: [ItemRepresentation] = []
  /// The representations a load handler produces on demand, in registration order.
  public internal(set) var lazyRepresentations: [LazyRepresentation] = []
  /// Where each lazy representation is in the registration order of all of them (eager
  /// ones fill the other places), so a provider with nothing lazy costs nothing more.
  private var lazyPositions: [Int] = []
  /// The file name to use when writing the payload to disk (`suggestedName`).
  public var suggestedName: String?
  /// The estimated display size in points; ``PresentationSize/zero`` when unknown.
  public var preferredPresentationSize: PresentationSize = .zero

  /// Creates a provider with no representations.
  public init() {}

  /// Creates a provider from representations, dropping any whose type is already registered.
  public init(
    representations: [ItemRepresentation],
    suggestedName: String? = nil,
    preferredPresentationSize: PresentationSize = .zero
  ) {
    for representation in representations { register(representation) }
    self.suggestedName = suggestedName
    self.preferredPresentationSize = preferredPresentationSize
  }

  /// Creates a provider for a file, typed by its filename extension (`public.data` when the
  /// extension is unknown), as `initWithContentsOfURL:` does.
  ///
  /// The file is carried by reference and named by its last path component.
  public init(fileAtPath path: String, registry: UniformTypeRegistry = .system) {
    let name = path.split(separator: "/").last ?? Substring(path)
    var type = registry.type(forFileName: name)
    if type.isDynamic { type = .data }
    register(ItemRepresentation(type: type, content: .file(path: path)))
    suggestedName = String(name)
  }

  /// Creates a provider for a URL: `public.file-url` for a `file` URL, else `public.url`.
  public init(url: URL) {
    register(ItemRepresentation(type: url.isFileURL ? .fileURL : .url, content: .url(url)))
  }

  /// Creates a provider for text, registered as `public.utf8-plain-text` by default.
  public init(text: String, type: UniformType = .utf8PlainText) {
    register(ItemRepresentation(type: type, content: .text(text)))
  }

  /// Creates a provider for inline bytes of a type.
  public init(data: Data, type: UniformType) {
    register(ItemRepresentation(type: type, content: .data(data)))
  }

  /// Adds a representation after the existing ones.
  ///
  /// - Returns: `false`, leaving the provider unchanged, when the type is already registered.
  @discardableResult
  public mutating func register(_ representation: ItemRepresentation) -> Bool {
    guard !isRegistered(representation.type) else { return false }
    representations.append(representation)
    return true
  }

  /// Adds a lazy representation after the existing ones.
  ///
  /// - Returns: `false`, leaving the provider unchanged, when the type is already registered.
  @discardableResult
  public mutating func register(_ representation: LazyRepresentation) -> Bool {
    guard !isRegistered(representation.type) else { return false }
    lazyPositions.append(representations.count + lazyRepresentations.count)
    lazyRepresentations.append(representation)
    return true
  }

  private func isRegistered(_ type: UniformType) -> Bool {
    representations.contains { $0.type == type } || lazyRepresentations.contains { $0.type == type }
  }

  /// Adds a representation built from its parts; see ``register(_:)``.
  @discardableResult
  public mutating func register(
    _ content: ItemRepresentation.Content, as type: UniformType,
    visibility: ItemRepresentation.Visibility = .all
  ) -> Bool {
    register(ItemRepresentation(type: type, visibility: visibility, content: content))
  }

  /// Every registered type, eager and lazy, in registration order
  /// (`registeredTypeIdentifiers`).
  public var registeredTypes: [UniformType] {
    lazyRepresentations.isEmpty ? representations.map(\.type) : registrations.map(\.type)
  }

  /// Every registration, eager and lazy, in registration order.
  public var registrations: [Registration] {
    guard !lazyRepresentations.isEmpty else { return representations.map(Registration.eager) }
    var result: [Registration] = []
    result.reserveCapacity(representations.count + lazyRepresentations.count)
    var eager = 0
    var lazy = 0
    while eager < representations.count || lazy < lazyRepresentations.count {
      if lazy < lazyPositions.count, lazyPositions[lazy] == result.count {
        result.append(.lazy(lazyRepresentations[lazy]))
        lazy += 1
      } else {
        result.append(.eager(representations[eager]))
        eager += 1
      }
    }
    return result
  }

  /// The registered types that conform to `type`, in registration order
  /// (`registeredContentTypes(conformingTo:)`).
  public func registeredTypes(
    conformingTo type: UniformType, in registry: UniformTypeRegistry = .system
  ) -> [UniformType] {
    registeredTypes.filter { registry.conforms($0, to: type) }
  }

  /// Whether any registered type conforms to `type` (`hasItemConformingToTypeIdentifier:`).
  ///
  /// This is a conformance test, not string equality: a `public.jpeg` representation
  /// satisfies `public.image`. A lazy representation answers by its registered type; its
  /// handler is not run.
  public func hasItemConforming(
    to type: UniformType, in registry: UniformTypeRegistry = .system
  ) -> Bool {
    representations.contains { registry.conforms($0.type, to: type) }
      || lazyRepresentations.contains { registry.conforms($0.type, to: type) }
  }

  /// Whether some type is registered with a load handler: the provider must be
  /// ``loaded()`` before it can be encoded.
  public var hasLazyRepresentations: Bool { !lazyRepresentations.isEmpty }

  /// The first representation at hand, in registration order, whose type conforms to
  /// `type`; lazy representations are not considered (see ``registration(conformingTo:in:)``).
  public func representation(
    conformingTo type: UniformType, in registry: UniformTypeRegistry = .system
  ) -> ItemRepresentation? {
    representations.first { registry.conforms($0.type, to: type) }
  }

  /// A registration: a representation at hand or a lazy one.
  public enum Registration: Hashable, Sendable {
    /// A representation whose payload is at hand.
    case eager(ItemRepresentation)
    /// A representation a load handler produces.
    case lazy(LazyRepresentation)

    /// The registered type.
    public var type: UniformType {
      switch self {
      case .eager(let representation): representation.type
      case .lazy(let representation): representation.type
      }
    }
  }

  /// The first registration, eager or lazy, in registration order, whose type conforms to
  /// `type`: the one a load of `type` uses.
  public func registration(
    conformingTo type: UniformType, in registry: UniformTypeRegistry = .system
  ) -> Registration? {
    guard !lazyRepresentations.isEmpty else {
      return representation(conformingTo: type, in: registry).map(Registration.eager)
    }
    return registrations.first { registry.conforms($0.type, to: type) }
  }
}
