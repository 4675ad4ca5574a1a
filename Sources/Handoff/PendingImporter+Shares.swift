extension PendingImporter {
  /// The shares as an asynchronous sequence: drained at start and on every post.
  ///
  /// A share is acknowledged (removed from the spool) when the loop asks for the next one.
  /// Leaving the loop by `break`, by an error or by cancellation leaves the current share in
  /// the spool, and the next drain delivers it again, so a crash never loses one.
  ///
  /// ```swift
  /// for try await share in importer.shares() {
  ///   try library.insert(share)
  /// }
  /// ```
  public func shares() -> PendingShares { PendingShares(importer: self) }
}
