/// Why the bridge refused a setting or a message: a stable code and a message for people.
public struct BridgeError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What kind of failure it is.
  public struct Code: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A command-line option or its value is wrong (exit 64).
    public static let usage = Code(rawValue: "usage")
    /// The configuration file, or a file it names, is wrong or unreadable.
    public static let configuration = Code(rawValue: "configuration")
    /// A received topic is not one the bridge writes.
    public static let badTopic = Code(rawValue: "bad-topic")
    /// A received payload or its properties are malformed.
    public static let badPayload = Code(rawValue: "bad-payload")
    /// A received payload is larger than any version-1 payload.
    public static let tooLarge = Code(rawValue: "too-large")
    /// A payload of a format version this bridge does not read.
    public static let unknownVersion = Code(rawValue: "unknown-version")
    /// libmosquitto failed.
    public static let client = Code(rawValue: "client")
  }

  /// The stable code.
  public var code: Code
  /// What went wrong, naming the option, file, topic or broker involved.
  public var message: String

  /// Creates an error.
  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
  }

  public var description: String { message }
}
