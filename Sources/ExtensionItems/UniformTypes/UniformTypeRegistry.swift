/// A set of type declarations that answers conformance and tag questions.
///
/// ``system`` holds the graph shipped in `Protocol/uniform-types.json`. Add an app's own
/// types with ``declaring(exported:imported:)``. Conformance comes only from declarations,
/// never from MIME subclassing: `text/html` is a subclass of `text/plain` to
/// shared-mime-info, but `public.html` does not conform to `public.plain-text`.
public struct UniformTypeRegistry: Sendable {
  /// The system type graph of `Protocol/uniform-types.json`.
  public static let system = UniformTypeRegistry(declarations: UniformTypeDeclaration.systemTable)

  /// The prefix of every dynamic type identifier.
  static let dynamicPrefix = "dyn."
  private static let dynamicExtensionPrefix = "dyn.ext-"
  private static let dynamicMIMEPrefix = "dyn.mime-"

  /// The declarations in the order they were made; the first declaration of an identifier
  /// wins.
  public private(set) var declarations: [UniformTypeDeclaration] = []
  private var indexByKey: [String: Int] = [:]
  private var ancestorsByKey: [String: Set<String>] = [:]
  private var keysByExtension: [String: [String]] = [:]
  private var keysByMIMEType: [String: [String]] = [:]

  /// Creates a registry from declarations; a repeated identifier keeps its first declaration.
  public init(declarations: [UniformTypeDeclaration]) {
    add(declarations)
  }

  /// A registry with an app's custom types added after the ones already known.
  ///
  /// Precedence follows Launch Services: a type already in this registry (for example a
  /// system type) cannot be redeclared, an exported declaration wins over an imported one,
  /// and within each list the first declaration of an identifier wins.
  public func declaring(
    exported: [UniformTypeDeclaration] = [],
    imported: [UniformTypeDeclaration] = []
  ) -> UniformTypeRegistry {
    var copy = self
    copy.add(exported + imported)
    return copy
  }

  private mutating func add(_ newDeclarations: [UniformTypeDeclaration]) {
    for declaration in newDeclarations {
      let key = UniformType.lowercasedASCII(declaration.identifier)
      guard indexByKey[key] == nil, !key.hasPrefix(Self.dynamicPrefix) else { continue }
      indexByKey[key] = declarations.count
      declarations.append(declaration)
      for tag in declaration.filenameExtensions {
        keysByExtension[Self.normalizedExtension(tag), default: []].append(key)
      }
      for tag in declaration.mimeTypes {
        keysByMIMEType[Self.normalizedMIMEType(tag), default: []].append(key)
      }
    }
    ancestorsByKey = [:]
    for key in indexByKey.keys {
      ancestorsByKey[key] = computeAncestors(of: key)
    }
  }

  private func computeAncestors(of key: String) -> Set<String> {
    var result: Set<String> = []
    var stack = parentKeys(of: key)
    while let next = stack.popLast() {
      guard next != key, result.insert(next).inserted else { continue }
      stack.append(contentsOf: parentKeys(of: next))
    }
    return result
  }

  private func parentKeys(of key: String) -> [String] {
    guard let index = indexByKey[key] else { return [] }
    return declarations[index].conformsTo.map(UniformType.lowercasedASCII)
  }

  // MARK: Queries

  /// The declaration of `type`, synthesized for dynamic types; `nil` when unknown.
  public func declaration(for type: UniformType) -> UniformTypeDeclaration? {
    if let index = indexByKey[type.key] { return declarations[index] }
    if let tag = Self.dynamicTag(type.key, prefix: Self.dynamicExtensionPrefix) {
      return UniformTypeDeclaration(
        identifier: type.identifier, conformsTo: ["public.data"], filenameExtensions: [tag])
    }
    if let tag = Self.dynamicTag(type.key, prefix: Self.dynamicMIMEPrefix) {
      return UniformTypeDeclaration(
        identifier: type.identifier, conformsTo: ["public.data"], mimeTypes: [tag])
    }
    return nil
  }

  /// Whether `type` is declared in this registry (dynamic types are not declared).
  public func isDeclared(_ type: UniformType) -> Bool { indexByKey[type.key] != nil }

  /// Whether `type` conforms to `other`.
  ///
  /// A type conforms to itself and to its transitive parents. Dynamic types conform to
  /// `public.data` and `public.item`; unknown types only to themselves.
  public func conforms(_ type: UniformType, to other: UniformType) -> Bool {
    if type.key == other.key { return true }
    if let ancestors = ancestorsByKey[type.key] { return ancestors.contains(other.key) }
    if type.isDynamic, declaration(for: type) != nil {
      return other.key == "public.data" || other.key == "public.item"
    }
    return false
  }

  /// Every type `type` conforms to, itself excluded.
  public func supertypes(of type: UniformType) -> Set<UniformType> {
    if let ancestors = ancestorsByKey[type.key] {
      return Set(ancestors.map { UniformType(identifier(forKey: $0)) })
    }
    if type.isDynamic, declaration(for: type) != nil { return [.data, .item] }
    return []
  }

  private func identifier(forKey key: String) -> String {
    indexByKey[key].map { declarations[$0].identifier } ?? key
  }

  /// The declared types that carry a filename extension, in declaration order.
  public func types(forFilenameExtension filenameExtension: String) -> [UniformType] {
    (keysByExtension[Self.normalizedExtension(filenameExtension)] ?? []).map {
      UniformType(identifier(forKey: $0))
    }
  }

  /// The declared types that carry a MIME type, in declaration order.
  ///
  /// A MIME type with parameters (`text/plain;charset=utf-8`) first matches declarations of
  /// exactly that string, then declarations of its essence (`text/plain`).
  public func types(forMIMEType mimeType: String) -> [UniformType] {
    let normalized = Self.normalizedMIMEType(mimeType)
    var keys = keysByMIMEType[normalized] ?? []
    if let semicolon = normalized.firstIndex(of: ";") {
      keys += keysByMIMEType[String(normalized[..<semicolon])] ?? []
    }
    return keys.map { UniformType(identifier(forKey: $0)) }
  }

  /// The type for a filename extension: the first declared type with that extension that
  /// conforms to `supertype`, else a dynamic type (`UTType(filenameExtension:conformingTo:)`).
  public func type(
    forFilenameExtension filenameExtension: String, conformingTo supertype: UniformType = .data
  ) -> UniformType {
    types(forFilenameExtension: filenameExtension).first { conforms($0, to: supertype) }
      ?? UniformType(
        Self.dynamicExtensionPrefix + Self.hex(Self.normalizedExtension(filenameExtension)))
  }

  /// The type for a MIME type: the first declared type with that MIME type that conforms
  /// to `supertype`, else a dynamic type (`UTType(mimeType:conformingTo:)`).
  public func type(forMIMEType mimeType: String, conformingTo supertype: UniformType = .data)
    -> UniformType
  {
    types(forMIMEType: mimeType).first { conforms($0, to: supertype) }
      ?? UniformType(Self.dynamicMIMEPrefix + Self.hex(Self.normalizedMIMEType(mimeType)))
  }

  /// The type for a file name, from its extension; `public.data` when it has none.
  public func type(forFileName fileName: Substring) -> UniformType {
    guard let dot = fileName.lastIndex(of: "."), fileName.index(after: dot) != fileName.endIndex,
      dot != fileName.startIndex
    else { return .data }
    return type(forFilenameExtension: String(fileName[fileName.index(after: dot)...]))
  }

  /// The first filename extension declared for `type`, if any.
  public func preferredFilenameExtension(for type: UniformType) -> String? {
    declaration(for: type)?.filenameExtensions.first
  }

  /// The first MIME type declared for `type`, if any.
  public func preferredMIMEType(for type: UniformType) -> String? {
    declaration(for: type)?.mimeTypes.first
  }

  // MARK: Tags

  private static func normalizedExtension(_ tag: String) -> String {
    UniformType.lowercasedASCII(tag.hasPrefix(".") ? String(tag.dropFirst()) : tag)
  }

  private static func normalizedMIMEType(_ tag: String) -> String {
    UniformType.lowercasedASCII(String(tag.unicodeScalars.filter { $0 != " " && $0 != "\t" }))
  }

  private static func hex(_ string: String) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(string.utf8.count * 2)
    for byte in string.utf8 {
      bytes.append(digits[Int(byte >> 4)])
      bytes.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: bytes, as: UTF8.self)
  }

  private static func dynamicTag(_ key: String, prefix: String) -> String? {
    guard key.hasPrefix(prefix) else { return nil }
    let digits = Array(key.utf8.dropFirst(prefix.utf8.count))
    guard !digits.isEmpty, digits.count.isMultiple(of: 2) else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(digits.count / 2)
    var index = 0
    while index < digits.count {
      guard let high = hexValue(digits[index]), let low = hexValue(digits[index + 1]) else {
        return nil
      }
      bytes.append(high << 4 | low)
      index += 2
    }
    return String(validating: bytes, as: UTF8.self)
  }

  private static func hexValue(_ digit: UInt8) -> UInt8? {
    switch digit {
    case 0x30...0x39: return digit - 0x30
    case 0x61...0x66: return digit - 0x61 + 10
    default: return nil
    }
  }
}
