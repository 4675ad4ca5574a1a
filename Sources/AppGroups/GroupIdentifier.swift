/// A validated App Group identifier: `group.` followed by a reverse-DNS name.
///
/// The reverse-DNS part follows the D-Bus and Flatpak application-id rules: at least two
/// dot-separated elements, each made of ASCII letters, digits, `_` and `-`, none empty and
/// none starting with a digit, and the whole identifier at most 255 bytes.
///
/// Valid: `group.com.example.reader`, `group.org.example_1.share-target`.
/// Invalid: `com.example.reader` (no `group.` prefix), `group.example` (one element),
/// `group.com..example` (empty element), `group.com.1example` (element starts with a digit),
/// `group.com/example` (`/` is not allowed).
public struct GroupIdentifier: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
  /// The identifier, for example `group.com.example.reader`.
  public let rawValue: String

  /// The longest identifier accepted, in bytes.
  public static var maximumLength: Int { 255 }

  /// Validates an identifier, returning `nil` when it is not valid.
  ///
  /// - Parameter rawValue: The candidate identifier.
  public init?(rawValue: String) {
    guard (try? Self.validate(rawValue)) != nil else { return nil }
    self.rawValue = rawValue
  }

  /// Validates an identifier, throwing an error that says why it is not valid.
  ///
  /// - Parameter identifier: The candidate identifier.
  /// - Throws: ``ContainerError`` with code ``ContainerError/Code/invalidIdentifier``.
  public init(validating identifier: String) throws(ContainerError) {
    try Self.validate(identifier)
    self.rawValue = identifier
  }

  /// The identifier.
  public var description: String { rawValue }

  private static func validate(_ identifier: String) throws(ContainerError) {
    func invalid(_ why: String) -> ContainerError {
      ContainerError(
        code: .invalidIdentifier, path: "",
        message: "Invalid group identifier '\(identifier)': \(why). Expected 'group.' followed "
          + "by a reverse-DNS name, for example 'group.com.example.app'.")
    }
    let prefix = "group."
    guard identifier.utf8.count <= maximumLength else {
      throw invalid("it is longer than \(maximumLength) bytes")
    }
    guard identifier.hasPrefix(prefix) else { throw invalid("it does not start with 'group.'") }
    let name = identifier.utf8.dropFirst(prefix.utf8.count)
    let elements = name.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    guard elements.count >= 2 else {
      throw invalid("the reverse-DNS name needs at least two dot-separated elements")
    }
    for (index, element) in elements.enumerated() {
      guard let first = element.first else {
        throw invalid("element \(index + 1) of the reverse-DNS name is empty")
      }
      guard !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
        throw invalid("element '\(String(decoding: element, as: UTF8.self))' starts with a digit")
      }
      for byte in element where !isIdentifierByte(byte) {
        let shown = byte < 0x80 ? "'\(Character(Unicode.Scalar(byte)))'" : "a non-ASCII byte"
        throw invalid("it contains \(shown); only letters, digits, '_', '-' and '.' are allowed")
      }
    }
  }

  private static func isIdentifierByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
      return true
    default:
      return false
    }
  }
}
