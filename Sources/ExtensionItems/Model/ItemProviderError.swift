/// Why a provider could not deliver a representation, with `NSItemProvider`'s error codes.
public struct ItemProviderError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The error's stable code.
  public var code: Code
  /// What went wrong, naming the type and the representation involved.
  public var message: String

  /// Creates an error.
  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
  }

  /// "<message> (NSItemProviderErrorDomain <code>)", or `NSCocoaErrorDomain` for
  /// ``Code/cancelled``.
  public var description: String {
    let domain = code == .cancelled ? "NSCocoaErrorDomain" : "NSItemProviderErrorDomain"
    return "\(message) (\(domain) \(code.rawValue))"
  }

  /// `NSItemProviderErrorCode` values.
  public struct Code: RawRepresentable, Hashable, Sendable {
    /// The raw value, as in `NSItemProviderErrorCode`.
    public var rawValue: Int
    /// Creates a code from its raw value.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Something else went wrong, such as an I/O error (`NSItemProviderUnknownError`, -1).
    public static let unknown = Code(rawValue: -1)
    /// No representation conforms to the requested type, or its file is missing
    /// (`NSItemProviderItemUnavailableError`, -1000).
    public static let itemUnavailable = Code(rawValue: -1000)
    /// The payload could not be read as the requested kind, such as bytes that are not UTF-8
    /// or text that is not a URL (`NSItemProviderUnexpectedValueClassError`, -1100).
    public static let unexpectedValueClass = Code(rawValue: -1100)
    /// The coercion table has no way from the stored kind to the requested one
    /// (`NSItemProviderUnavailableCoercionError`, -1200).
    public static let unavailableCoercion = Code(rawValue: -1200)
    /// The load was cancelled before its handler completed, as when its task was cancelled
    /// or an extension request passed its time limit (`NSUserCancelledError`, 3072 in
    /// `NSCocoaErrorDomain`, what a cancelled `NSItemProvider` load reports).
    public static let cancelled = Code(rawValue: 3072)
  }
}
