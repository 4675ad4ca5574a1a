/// A handoff failure: a stable code and a message that names what went wrong.
///
/// ```swift
/// do {
///   try await sender.send(items)
/// } catch where error.code == .postFailed {
///   // The items are stored; the app drains them at its next launch or doorbell.
/// }
/// ```
public struct HandoffError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What kind of failure this is.
  public var code: Code
  /// A sentence for people, naming the group, the item or the file involved.
  public var message: String

  /// Creates an error.
  ///
  /// - Parameters:
  ///   - code: The stable code.
  ///   - message: The human message.
  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
  }

  /// The message.
  public var description: String { message }

  /// A stable error code, open for new members like swift-system's `Errno`.
  public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code's name, for example `postFailed`.
    public let rawValue: String

    /// Creates a code from its name.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The code's name.
    public var description: String { rawValue }

    /// The group container or its spool could not be opened, written or drained.
    public static var container: Code { .init(rawValue: "container") }
    /// The items could not be encoded (a codec limit, or a NUL in a string).
    public static var encoding: Code { .init(rawValue: "encoding") }
    /// The bus could not be reached.
    public static var notConnected: Code { .init(rawValue: "notConnected") }
    /// The items were stored but the notification could not be posted; they are drained at
    /// the app's next launch or next doorbell.
    public static var postFailed: Code { .init(rawValue: "postFailed") }
    /// A notification name was invalid.
    public static var invalidName: Code { .init(rawValue: "invalidName") }
    /// ``ExtensionContext/completeRequest(returningItems:)`` or
    /// ``ExtensionContext/cancelRequest(withError:)`` was called after the request ended.
    public static var requestFinished: Code { .init(rawValue: "requestFinished") }
    /// The request was cancelled by the extension.
    public static var userCancelled: Code { .init(rawValue: "userCancelled") }
  }
}
