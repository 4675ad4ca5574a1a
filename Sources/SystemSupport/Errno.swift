#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// An error number reported by a system call.
///
/// An open struct over the raw `errno` value in the style of swift-system's `Errno`:
/// unknown values round-trip, and ``description`` uses `strerror`.
package struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
  /// The raw C error number.
  package let rawValue: CInt

  /// Creates an error from a raw C error number.
  package init(rawValue: CInt) { self.rawValue = rawValue }

  /// The calling thread's current `errno`.
  package static var current: Errno { Errno(rawValue: errno) }

  /// A system call was interrupted.
  ///
  /// The corresponding C error is `EINTR`.
  package static var interrupted: Errno { Errno(rawValue: EINTR) }
  /// No such file or directory.
  ///
  /// The corresponding C error is `ENOENT`.
  package static var noSuchFileOrDirectory: Errno { Errno(rawValue: ENOENT) }
  /// The file exists.
  ///
  /// The corresponding C error is `EEXIST`.
  package static var fileExists: Errno { Errno(rawValue: EEXIST) }
  /// Permission denied.
  ///
  /// The corresponding C error is `EACCES`.
  package static var permissionDenied: Errno { Errno(rawValue: EACCES) }

  /// The text `strerror` gives for this error, with its number, such as
  /// `(2) No such file or directory`.
  package var description: String {
    guard let text = strerror(rawValue) else { return "(\(rawValue)) unknown error" }
    return "(\(rawValue)) \(String(cString: text))"
  }
}

/// Retries `body` while it fails with `EINTR`, and returns its result or the error.
///
/// - Parameter body: A system call that returns -1 and sets `errno` on failure.
/// - Returns: The call's non-negative result.
/// - Throws: ``Errno`` for any failure other than `EINTR`.
package func retryingOnInterrupt<T: FixedWidthInteger>(_ body: () -> T) throws(Errno) -> T {
  while true {
    let result = body()
    if result != -1 { return result }
    let error = Errno.current
    if error != .interrupted { throw error }
  }
}
