public import Foundation
import PropertyLists
import SystemSupport

/// The extension part of an `Info.plist`: where an extension plugs in and what it accepts.
///
/// Reads `NSExtension` (`NSExtensionPointIdentifier`, `NSExtensionAttributes` with its
/// `NSExtensionActivationRule`, `NSExtensionPrincipalClass`, `NSExtensionMainStoryboard`)
/// plus `CFBundleIdentifier`, `CFBundleDisplayName` (or `CFBundleName`) and the `UTExportedTypeDeclarations` /
/// `UTImportedTypeDeclarations` an activation rule may refer to, from an XML or a binary
/// property list.
public struct ExtensionManifest: Hashable, Sendable {
  /// `CFBundleIdentifier`, if present.
  public var bundleIdentifier: String?
  /// `CFBundleDisplayName`, else `CFBundleName`, if present: the name people see.
  public var displayName: String?
  /// `NSExtension.NSExtensionPointIdentifier`, for example `com.apple.share-services`.
  public var pointIdentifier: String
  /// `NSExtension.NSExtensionAttributes`, or empty.
  public var attributes: [String: PropertyListValue]
  /// `NSExtension.NSExtensionAttributes.NSExtensionActivationRule`, if present.
  public var activationRule: ActivationRule?
  /// `NSExtension.NSExtensionPrincipalClass`, if present.
  public var principalClass: String?
  /// `NSExtension.NSExtensionMainStoryboard`, if present.
  public var mainStoryboard: String?
  /// The whole `NSExtension` dictionary, including keys this type does not interpret.
  public var extensionDictionary: [String: PropertyListValue]
  /// `UTExportedTypeDeclarations`: types this bundle owns.
  public var exportedTypes: [UniformTypeDeclaration]
  /// `UTImportedTypeDeclarations`: types owned elsewhere that this bundle uses.
  public var importedTypes: [UniformTypeDeclaration]

  /// The largest manifest file accepted, in bytes.
  public static let maximumSize = 4 * 1_048_576
  /// What a binary manifest may hold: 64 levels and 262,144 values, as an XML one may.
  static let binaryLimits = BinaryPropertyList.Limits(maximumDepth: 64, maximumValues: 262_144)

  /// The system registry with this manifest's exported and imported types added.
  public var typeRegistry: UniformTypeRegistry {
    UniformTypeRegistry.system.declaring(exported: exportedTypes, imported: importedTypes)
  }

  /// Reads a manifest from XML or binary property-list bytes.
  ///
  /// Binary property lists are read by this module's own reader; XML goes through
  /// Foundation's `PropertyListSerialization`. Other formats (OpenStep text) are rejected.
  ///
  /// - Note: swift-corelibs-foundation 6.3.1 leaks about 150 bytes each time
  ///   `PropertyListSerialization` rejects malformed XML; avoid feeding it untrusted input in
  ///   a loop in a long-lived process.
  public init(propertyList data: Data) throws(ExtensionManifestError) {
    guard data.count <= Self.maximumSize else {
      throw ExtensionManifestError(
        .tooLarge, keyPath: "",
        "the manifest is \(data.count) bytes; at most \(Self.maximumSize) are accepted")
    }
    let value: PropertyListValue
    if BinaryPropertyList.isBinaryPropertyList(data) {
      do {
        value = try BinaryPropertyList.decode(Array(data), limits: Self.binaryLimits)
      } catch {
        throw ExtensionManifestError(
          .unreadable, keyPath: "", "not a valid binary property list: \(error.message)")
      }
    } else {
      guard Self.looksLikeXML(data) else {
        throw ExtensionManifestError(
          .unreadable, keyPath: "", "not an XML or binary property list")
      }
      let object: Any
      do {
        object = try PropertyListSerialization.propertyList(from: data, format: nil)
      } catch {
        throw ExtensionManifestError(
          .unreadable, keyPath: "", "not an XML property list: \(error)")
      }
      guard let converted = PropertyListValue(propertyListObject: object) else {
        throw ExtensionManifestError(
          .unreadable, keyPath: "", "the property list holds values of unsupported types")
      }
      value = converted
    }
    guard case .dictionary(let info) = value else {
      throw ExtensionManifestError(
        .wrongType, keyPath: "", "the top level of the manifest is not a dictionary")
    }
    try self.init(infoDictionary: info)
  }

  /// Whether the first byte after an optional UTF-8 byte-order mark and white space is `<`.
  private static func looksLikeXML(_ data: Data) -> Bool {
    var bytes = data[...]
    if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
    let first = bytes.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
    return first == UInt8(ascii: "<")
  }

  /// Reads a manifest file of at most ``maximumSize`` bytes.
  ///
  /// A FIFO, a device or a directory is refused with an error that says what it is.
  public init(contentsOf url: URL) throws(ExtensionManifestError) {
    let bytes: [UInt8]
    do {
      bytes = try FileDescriptor<FileSystemError>.readRegularFile(
        url.path, limit: Self.maximumSize)
    } catch {
      if case .tooLarge = error.problem {
        throw ExtensionManifestError(
          .tooLarge, keyPath: "", "\(url.path) is larger than \(Self.maximumSize) bytes")
      }
      throw ExtensionManifestError(.unreadable, keyPath: "", "\(error)")
    }
    try self.init(propertyList: Data(bytes))
  }

  /// Reads the key/value lines of an `Info.plist` dictionary body, such as the
  /// `<key>NSExtension</key><dict>…</dict>` snippet extension guides show.
  public init(xmlFragment: String) throws(ExtensionManifestError) {
    let document = """
      <?xml version="1.0" encoding="UTF-8"?>
      <plist version="1.0"><dict>
      \(xmlFragment)
      </dict></plist>
      """
    try self.init(propertyList: Data(document.utf8))
  }

  /// Reads a manifest from an already-parsed `Info.plist` dictionary.
  public init(infoDictionary info: [String: PropertyListValue]) throws(ExtensionManifestError) {
    bundleIdentifier = try Self.optionalString(info, "CFBundleIdentifier", in: "")
    displayName = try Self.optionalString(info, "CFBundleDisplayName", in: "")
    if displayName == nil { displayName = try Self.optionalString(info, "CFBundleName", in: "") }
    guard let extensionValue = info["NSExtension"] else {
      throw ExtensionManifestError(.missingKey, keyPath: "NSExtension", "the key is missing")
    }
    guard case .dictionary(let ext) = extensionValue else {
      throw ExtensionManifestError(.wrongType, keyPath: "NSExtension", "expected a dictionary")
    }
    extensionDictionary = ext
    guard let point = try Self.optionalString(ext, "NSExtensionPointIdentifier", in: "NSExtension")
    else {
      throw ExtensionManifestError(
        .missingKey, keyPath: "NSExtension.NSExtensionPointIdentifier", "the key is missing")
    }
    pointIdentifier = point
    principalClass = try Self.optionalString(ext, "NSExtensionPrincipalClass", in: "NSExtension")
    mainStoryboard = try Self.optionalString(ext, "NSExtensionMainStoryboard", in: "NSExtension")
    switch ext["NSExtensionAttributes"] {
    case nil:
      attributes = [:]
    case .dictionary(let entries)?:
      attributes = entries
    default:
      throw ExtensionManifestError(
        .wrongType, keyPath: "NSExtension.NSExtensionAttributes", "expected a dictionary")
    }
    let ruleKeyPath = "NSExtension.NSExtensionAttributes.NSExtensionActivationRule"
    do {
      activationRule = try attributes["NSExtensionActivationRule"].map {
        value throws(PredicateParseError) in try ActivationRule(propertyListValue: value)
      }
    } catch  where error.code == .notARule {
      throw ExtensionManifestError(.wrongType, keyPath: ruleKeyPath, error.description)
    } catch {
      throw ExtensionManifestError(
        .invalidActivationRule, keyPath: ruleKeyPath, "the predicate does not parse: \(error)")
    }
    exportedTypes = try Self.declarations(info, "UTExportedTypeDeclarations")
    importedTypes = try Self.declarations(info, "UTImportedTypeDeclarations")
  }

  private static func optionalString(
    _ dictionary: [String: PropertyListValue], _ key: String, in parent: String
  ) throws(ExtensionManifestError) -> String? {
    guard let value = dictionary[key] else { return nil }
    guard case .string(let string) = value else {
      throw ExtensionManifestError(
        .wrongType, keyPath: parent.isEmpty ? key : "\(parent).\(key)", "expected a string")
    }
    return string
  }

  /// A string or an array of strings, as `UTTypeConformsTo` and tag values may be written.
  private static func strings(_ value: PropertyListValue?, keyPath: String)
    throws(ExtensionManifestError) -> [String]
  {
    switch value {
    case nil: return []
    case .string(let string)?: return [string]
    case .array(let elements)?:
      var result: [String] = []
      for element in elements {
        guard case .string(let string) = element else {
          throw ExtensionManifestError(
            .wrongType, keyPath: keyPath, "expected a string or an array of strings")
        }
        result.append(string)
      }
      return result
    default:
      throw ExtensionManifestError(
        .wrongType, keyPath: keyPath, "expected a string or an array of strings")
    }
  }

  private static func declarations(_ info: [String: PropertyListValue], _ key: String)
    throws(ExtensionManifestError) -> [UniformTypeDeclaration]
  {
    guard let value = info[key] else { return [] }
    guard case .array(let entries) = value else {
      throw ExtensionManifestError(.wrongType, keyPath: key, "expected an array")
    }
    var result: [UniformTypeDeclaration] = []
    for (index, entry) in entries.enumerated() {
      let path = "\(key)[\(index)]"
      guard case .dictionary(let fields) = entry else {
        throw ExtensionManifestError(.wrongType, keyPath: path, "expected a dictionary")
      }
      guard let identifier = try optionalString(fields, "UTTypeIdentifier", in: path) else {
        throw ExtensionManifestError(
          .missingKey, keyPath: "\(path).UTTypeIdentifier", "the key is missing")
      }
      var tags: [String: PropertyListValue] = [:]
      switch fields["UTTypeTagSpecification"] {
      case nil: break
      case .dictionary(let entries)?: tags = entries
      default:
        throw ExtensionManifestError(
          .wrongType, keyPath: "\(path).UTTypeTagSpecification", "expected a dictionary")
      }
      result.append(
        UniformTypeDeclaration(
          identifier: identifier,
          conformsTo: try strings(fields["UTTypeConformsTo"], keyPath: "\(path).UTTypeConformsTo"),
          filenameExtensions: try strings(
            tags["public.filename-extension"],
            keyPath: "\(path).UTTypeTagSpecification.public.filename-extension"),
          mimeTypes: try strings(
            tags["public.mime-type"], keyPath: "\(path).UTTypeTagSpecification.public.mime-type")))
    }
    return result
  }
}
