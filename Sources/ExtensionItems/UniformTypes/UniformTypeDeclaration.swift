/// What a registry knows about one type: its parents and its tags.
///
/// This is the shape of one entry of `Protocol/uniform-types.json` and of one
/// `UTExportedTypeDeclarations` / `UTImportedTypeDeclarations` entry in an `Info.plist`.
public struct UniformTypeDeclaration: Hashable, Sendable {
  /// The declared type's identifier.
  public var identifier: String
  /// The identifiers of the direct parents (`UTTypeConformsTo`).
  public var conformsTo: [String]
  /// Filename extensions without the dot, the preferred one first (`public.filename-extension`).
  public var filenameExtensions: [String]
  /// MIME types, the preferred one first (`public.mime-type`).
  public var mimeTypes: [String]

  /// Creates a declaration.
  public init(
    identifier: String,
    conformsTo: [String] = [],
    filenameExtensions: [String] = [],
    mimeTypes: [String] = []
  ) {
    self.identifier = identifier
    self.conformsTo = conformsTo
    self.filenameExtensions = filenameExtensions
    self.mimeTypes = mimeTypes
  }

  /// The declared type.
  public var type: UniformType { UniformType(identifier) }
}
