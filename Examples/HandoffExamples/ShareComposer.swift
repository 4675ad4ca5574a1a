public import ComposeSheet

/// Shows the compose sheet (`SLComposeServiceViewController`) and reports how it ended.
///
/// The share-extension executable implements it on a raw-mode terminal; the sheet itself,
/// what it draws and how it reads keys, is ``ComposeSheet``.
public protocol ShareComposer: Sendable {
  /// Shows the sheet's loading indicator while `load` runs, then the preview it returns and
  /// the editable text, until Post or Cancel.
  ///
  /// - Parameters:
  ///   - heading: The extension's name.
  ///   - text: The initial content text.
  ///   - load: Loads the providers (and connects the request); an error it throws ends the
  ///     sheet and is rethrown.
  /// - Returns: Post with the text, or Cancel (which may come before `load` finishes).
  func compose(
    heading: String, text: String,
    load: @escaping @Sendable () async throws -> ComposeSheet.Preview
  ) async throws -> ComposeSheet.Outcome
}
