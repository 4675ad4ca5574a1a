import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A fresh directory under `/tmp`, removed with everything in it when the value is released.
package final class TemporaryDirectory: Sendable {
  /// The directory's path.
  package let path: String

  /// Creates `/tmp/<prefix>-XXXXXX`; a test cannot go on without it, so failing traps.
  package init(_ prefix: String = "notifybus-test") {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { preconditionFailure("mkdtemp: \(Errno.current)") }
    path = String(cString: made)
  }

  /// Removed in the background (``Subprocess/startRemovingTree(_:)``): a value may be
  /// released on one of the Swift pool's threads, and TestTraits' `BlockingTrait` says why
  /// holding one stalls every test.
  deinit { Subprocess.startRemovingTree(path) }

  /// The path of `name` inside the directory.
  package func path(_ name: String) -> String { path + "/" + name }
}
