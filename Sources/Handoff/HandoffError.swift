public import AppGroups
public import ExtensionItems
public import Notify

/// A handoff failure: a stable code, a message that says what was being done and what went
/// wrong, and the lower error it came from.
///
/// ```swift
/// do {
///   try await sender.send(items)
/// } catch where error.code == .postFailed {
///   // The items are stored; the app drains them at its next launch or doorbell.
/// } catch {
///   if case .container(let lower)? = error.cause, lower.code == .quotaExceeded {
///     // The app has not drained for a long time: say so, rather than retrying.
///   } else if case .container(let lower)? = error.cause, lower.cause?.errno == EACCES {
///     // The group directory is not ours to write: a setup problem.
///   }
/// }
/// ```
public struct HandoffError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What kind of failure this is.
  public var code: Code
  /// A sentence for people: what was being done, naming the group, the item or the file,
  /// and why it failed.
  public var message: String
  /// The error of the layer below that this one came from, when there is one.
  public var cause: Cause?

  /// Creates an error.
  ///
  /// - Parameters:
  ///   - code: The stable code.
  ///   - message: The human message.
  ///   - cause: The lower error it came from.
  public init(_ code: Code, _ message: String, cause: Cause? = nil) {
    self.code = code
    self.message = message
    self.cause = cause
  }

  /// The message.
  public var description: String { message }

  /// The lower error a ``HandoffError`` came from, typed: zbus's `source()`, one case per layer.
  public enum Cause: Sendable, Hashable {
    /// The group container, its spool or its dedupe set failed (``ContainerError`` keeps its
    /// own code, such as ``ContainerError/Code/quotaExceeded``, and the failed system call
    /// with its `errno`).
    case container(ContainerError)
    /// The notify center failed: connecting, posting or registering.
    case notify(NotifyError)
    /// The item codec refused the items.
    case codec(ItemCodecError)
    /// A lazy representation could not be loaded: its handler failed, or its load was
    /// cancelled.
    case provider(ItemProviderError)

    /// The lower error, untyped.
    public var error: any Error {
      switch self {
      case .container(let error): error
      case .notify(let error): error
      case .codec(let error): error
      case .provider(let error): error
      }
    }
  }

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
    /// A lazy representation of the items could not be loaded; nothing was stored.
    ///
    /// Its handler failed or produced no payload; the message names the type.
    public static var loadFailed: Code { .init(rawValue: "loadFailed") }
    /// The extension request passed its time limit and was cancelled; nothing was stored.
    public static var timedOut: Code { .init(rawValue: "timedOut") }
    /// An extension request's time limit was not a positive number of seconds.
    public static var invalidTimeLimit: Code { .init(rawValue: "invalidTimeLimit") }
  }
}
