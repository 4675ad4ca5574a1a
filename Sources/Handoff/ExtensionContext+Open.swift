public import Activation
public import Foundation
import Notify

extension ExtensionContext {
  /// Asks the application that handles `url`'s scheme to open it, like
  /// `NSExtensionContext.open(_:completionHandler:)`.
  ///
  /// A D-Bus-activatable application is asked over D-Bus, on the sender's bus (which
  /// starts it when it is not running); any other through the desktop's handler.
  ///
  /// ```swift
  /// try await context.completeRequest(returningItems: context.inputItems)
  /// let opening = try await context.open(URL(string: "readlater://import?count=1")!)
  /// ```
  ///
  /// - Parameters:
  ///   - url: The URL, for example the app's `readlater://import?count=N`.
  ///   - directories: Where applications are installed.
  /// - Returns: Which application opened it, and which way.
  /// - Throws: ``ActivationError`` with its cause (see ``URLOpener``).
  public func open(_ url: URL, directories: ApplicationDirectories = .current)
    async throws(ActivationError) -> URLOpening
  {
    try await URLOpener.open(url, on: sender.center.connection, directories: directories)
  }
}
