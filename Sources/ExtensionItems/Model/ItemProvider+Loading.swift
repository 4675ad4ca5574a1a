public import Foundation
import SystemSupport

extension ItemProvider {
  /// Loads the first representation conforming to `type` as bytes
  /// (`loadDataRepresentation(forTypeIdentifier:)`), coercing as ``ItemCoercion`` says.
  ///
  /// This synchronous form loads representations at hand; when the first registration
  /// conforming to `type` is lazy it throws ``ItemProviderError/Code/itemUnavailable``
  /// saying so (load it with ``loadDataRepresentation(for:baseDirectory:registry:)``).
  ///
  /// - Parameters:
  ///   - type: The requested type; the first representation that conforms to it is used.
  ///   - baseDirectory: The directory relative file references are resolved against.
  ///   - registry: The type graph used for conformance.
  public func loadData(
    for type: UniformType, baseDirectory: URL? = nil, registry: UniformTypeRegistry = .system
  ) throws(ItemProviderError) -> Data {
    let representation = try firstRepresentation(conformingTo: type, registry: registry)
    return try Self.data(representation.content, type: type, baseDirectory: baseDirectory)
  }

  /// Loads the first representation conforming to `type` as text; synchronous, as
  /// ``loadData(for:baseDirectory:registry:)``.
  public func loadText(
    for type: UniformType, baseDirectory: URL? = nil, registry: UniformTypeRegistry = .system
  ) throws(ItemProviderError) -> String {
    let representation = try firstRepresentation(conformingTo: type, registry: registry)
    return try Self.text(representation.content, type: type, baseDirectory: baseDirectory)
  }

  /// Loads the first representation conforming to `type` as a URL; synchronous, as
  /// ``loadData(for:baseDirectory:registry:)``.
  public func loadURL(
    for type: UniformType, baseDirectory: URL? = nil, registry: UniformTypeRegistry = .system
  ) throws(ItemProviderError) -> URL {
    let representation = try firstRepresentation(conformingTo: type, registry: registry)
    return try Self.url(representation.content, type: type, baseDirectory: baseDirectory)
  }

  /// Loads the first representation conforming to `type` as a file
  /// (`loadFileRepresentation(forTypeIdentifier:)`); synchronous, as
  /// ``loadData(for:baseDirectory:registry:)``.
  ///
  /// A file reference, or a `file` URL, is returned as is: the file belongs to the item, so
  /// copy it before changing it. Inline data and text are written to a new file in
  /// `temporaryDirectory`, named by ``suggestedName`` or by a UUID and the type's preferred
  /// extension; that file belongs to the caller.
  public func loadFile(
    for type: UniformType, baseDirectory: URL? = nil,
    temporaryDirectory: URL = FileManager.default.temporaryDirectory,
    registry: UniformTypeRegistry = .system
  ) throws(ItemProviderError) -> URL {
    let representation = try firstRepresentation(conformingTo: type, registry: registry)
    return try file(
      representation, requested: type, baseDirectory: baseDirectory,
      temporaryDirectory: temporaryDirectory, registry: registry)
  }

  // MARK: Coercion

  /// `representation`'s payload as `kind`, as ``ItemCoercion`` says; a file is returned as a
  /// `.file` content holding its absolute path.
  func coerce(
    _ representation: ItemRepresentation, requested type: UniformType,
    to kind: ItemRepresentation.Kind, baseDirectory: URL?, temporaryDirectory: URL,
    registry: UniformTypeRegistry
  ) throws(ItemProviderError) -> ItemRepresentation.Content {
    let content = representation.content
    switch kind {
    case .data: return .data(try Self.data(content, type: type, baseDirectory: baseDirectory))
    case .text: return .text(try Self.text(content, type: type, baseDirectory: baseDirectory))
    case .url: return .url(try Self.url(content, type: type, baseDirectory: baseDirectory))
    case .file:
      let url = try file(
        representation, requested: type, baseDirectory: baseDirectory,
        temporaryDirectory: temporaryDirectory, registry: registry)
      return .file(path: url.path)
    }
  }

  private static func data(
    _ content: ItemRepresentation.Content, type: UniformType, baseDirectory: URL?
  ) throws(ItemProviderError) -> Data {
    switch content {
    case .data(let data):
      return data
    case .text(let text):
      return Data(text.utf8)
    case .file(let path):
      return try readFile(resolve(path, against: baseDirectory), type: type)
    case .url(let url):
      if url.isFileURL { return try readFile(url, type: type) }
      return Data(url.absoluteString.utf8)
    }
  }

  private static func text(
    _ content: ItemRepresentation.Content, type: UniformType, baseDirectory: URL?
  ) throws(ItemProviderError) -> String {
    switch content {
    case .text(let text):
      return text
    case .url(let url):
      return url.absoluteString
    case .data(let data):
      return try utf8(data, type: type, origin: "inline data")
    case .file(let path):
      let url = resolve(path, against: baseDirectory)
      return try utf8(readFile(url, type: type), type: type, origin: "file \(url.path)")
    }
  }

  private static func url(
    _ content: ItemRepresentation.Content, type: UniformType, baseDirectory: URL?
  ) throws(ItemProviderError) -> URL {
    switch content {
    case .url(let url):
      return url
    case .file(let path):
      return resolve(path, against: baseDirectory)
    case .text(let text):
      return try parseURL(text, type: type)
    case .data(let data):
      return try parseURL(utf8(data, type: type, origin: "inline data"), type: type)
    }
  }

  private func file(
    _ representation: ItemRepresentation, requested type: UniformType, baseDirectory: URL?,
    temporaryDirectory: URL, registry: UniformTypeRegistry
  ) throws(ItemProviderError) -> URL {
    let bytes: Data
    switch representation.content {
    case .file(let path):
      let url = Self.resolve(path, against: baseDirectory)
      guard FileManager.default.fileExists(atPath: url.path) else {
        throw ItemProviderError(
          .itemUnavailable, "the file for \(type) is missing: \(url.path)")
      }
      return url
    case .url(let url):
      guard url.isFileURL else {
        throw ItemProviderError(
          .unavailableCoercion,
          "the \(representation.type) representation is a non-file URL (\(url.absoluteString)); "
            + "it cannot be loaded as a file")
      }
      return url
    case .data(let data):
      bytes = data
    case .text(let text):
      bytes = Data(text.utf8)
    }
    let name = temporaryFileName(for: representation.type, registry: registry)
    let destination = temporaryDirectory.appendingPathComponent(
      UUID().uuidString, isDirectory: true)
    do {
      // A new private directory (0700, no link followed) holding one 0600 file.
      let directory = try Directory<FileSystemError>.openPrivate(destination.path)
      try directory.replaceFile(name, with: Array(bytes))
      return URL(fileURLWithPath: directory.childPath(name), isDirectory: false)
    } catch {
      throw ItemProviderError(
        .unknown, "could not write \(type) to \(destination.path): \(error)")
    }
  }

  // MARK: Helpers

  /// The first registration conforming to `type`, which must be at hand.
  private func firstRepresentation(
    conformingTo type: UniformType, registry: UniformTypeRegistry
  ) throws(ItemProviderError) -> ItemRepresentation {
    switch registration(conformingTo: type, in: registry) {
    case .eager(let representation)?:
      return representation
    case .lazy(let lazy)?:
      throw ItemProviderError(
        .itemUnavailable,
        "the \(lazy.type) representation is produced by a load handler; load it with the "
          + "async loadItem(for:as:) or loadDataRepresentation(for:)")
    case nil:
      throw unavailable(type)
    }
  }

  /// No registration conforms to `type`.
  func unavailable(_ type: UniformType) -> ItemProviderError {
    let offered = registeredTypes.map(\.identifier).joined(separator: ", ")
    return ItemProviderError(
      .itemUnavailable, "no representation conforms to \(type); registered: [\(offered)]")
  }

  private func temporaryFileName(for type: UniformType, registry: UniformTypeRegistry)
    -> String
  {
    if let name = suggestedName, !name.isEmpty, !name.contains("/"), name != ".", name != ".." {
      return name
    }
    let base = UUID().uuidString
    guard let ext = registry.preferredFilenameExtension(for: type) else { return base }
    return base + "." + ext
  }

  static func resolve(_ path: String, against baseDirectory: URL?) -> URL {
    if path.hasPrefix("/") || baseDirectory == nil {
      return URL(fileURLWithPath: path, isDirectory: false)
    }
    return baseDirectory!.appendingPathComponent(path, isDirectory: false)
  }

  /// The most bytes ``loadData(for:baseDirectory:registry:)`` reads from a file: the
  /// spool's default quota.
  public static let maximumFileSize = 4 << 30

  private static func readFile(_ url: URL, type: UniformType) throws(ItemProviderError) -> Data {
    do {
      // A FIFO or a device is refused rather than read without end.
      return Data(
        try FileDescriptor<FileSystemError>.readRegularFile(url.path, limit: maximumFileSize))
    } catch {
      if error.errno == .noSuchFileOrDirectory {
        throw ItemProviderError(.itemUnavailable, "the file for \(type) is missing: \(url.path)")
      }
      throw ItemProviderError(.unknown, "could not read the file for \(type): \(error)")
    }
  }

  private static func utf8(_ data: Data, type: UniformType, origin: String)
    throws(ItemProviderError) -> String
  {
    guard let text = String(validating: data, as: UTF8.self) else {
      throw ItemProviderError(
        .unexpectedValueClass, "the \(origin) for \(type) is not valid UTF-8 text")
    }
    return text
  }

  private static func parseURL(_ text: String, type: UniformType) throws(ItemProviderError)
    -> URL
  {
    let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
    guard let url = URL(string: trimmed), url.scheme != nil else {
      throw ItemProviderError(
        .unexpectedValueClass, "the payload for \(type) is not an absolute URL: \"\(trimmed)\"")
    }
    return url
  }
}
