/// Why an `Info.plist`-style manifest could not be read.
public struct ExtensionManifestError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The error's stable code.
  public var code: Code
  /// The key path of the offending entry, for example `NSExtension.NSExtensionPointIdentifier`.
  public var keyPath: String
  /// What was wrong.
  public var message: String

  /// Creates an error.
  public init(_ code: Code, keyPath: String, _ message: String) {
    self.code = code
    self.keyPath = keyPath
    self.message = message
  }

  /// "<keyPath>: <message>", or the message alone for the whole file.
  public var description: String { keyPath.isEmpty ? message : "\(keyPath): \(message)" }

  /// The kinds of manifest error.
  public struct Code: RawRepresentable, Hashable, Sendable {
    /// The raw value.
    public var rawValue: Int
    /// Creates a code from its raw value.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The bytes are not an XML or binary property list, or the file could not be read.
    public static let unreadable = Code(rawValue: 1)
    /// A required key is missing.
    public static let missingKey = Code(rawValue: 2)
    /// A value has the wrong kind, for example a string where a dictionary belongs.
    public static let wrongType = Code(rawValue: 3)
    /// `NSExtensionActivationRule` is a predicate string that does not parse.
    public static let invalidActivationRule = Code(rawValue: 4)
    /// The file is larger than ``ExtensionManifest/maximumSize``.
    public static let tooLarge = Code(rawValue: 5)
  }
}
