import Foundation

extension ActivationRule {
  /// The MIME types a launcher may hand this extension: a desktop entry's `MimeType=` list.
  ///
  /// Derived by asking the rule itself (`Protocol/desktop-entries.md` §2): for every declared
  /// type with MIME tags, in registry order, one item with one file attachment of that type;
  /// when the rule accepts it, the type's MIME types join the list (parameters such as
  /// `;charset=utf-8` dropped, each once). A file of no known type (`public.data`) adds
  /// `application/octet-stream`; one web URL (`https://example.com/`) adds `text/uri-list`,
  /// `x-scheme-handler/http` and `x-scheme-handler/https`, at the end. So a rule that takes
  /// images lists the image types, one that takes text `text/plain` and the other text types,
  /// and one that refuses everything lists nothing.
  public func mimeTypes(registry: UniformTypeRegistry = .system) -> [String] {
    var result: [String] = []
    func add(_ mimeType: String) {
      let essence = mimeType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
      let trimmed = essence.trimmingCharacters(in: .whitespaces).lowercased()
      guard !trimmed.isEmpty, !result.contains(trimmed) else { return }
      result.append(trimmed)
    }
    func accepts(_ provider: ItemProvider) -> Bool {
      evaluate([ExtensionItem(attachments: [provider])], registry: registry)
    }
    for declaration in registry.declarations where !declaration.mimeTypes.isEmpty {
      let type = UniformType(declaration.identifier)
      guard type != .data,
        accepts(ItemProvider(representations: [.init(type: type, content: .file(path: "/x"))]))
      else { continue }
      declaration.mimeTypes.forEach(add)
    }
    if accepts(ItemProvider(representations: [.init(type: .data, content: .file(path: "/x"))])) {
      add("application/octet-stream")
    }
    if accepts(ItemProvider(url: URL(string: "https://example.com/")!)) {
      ["text/uri-list", "x-scheme-handler/http", "x-scheme-handler/https"].forEach(add)
    }
    return result
  }
}
