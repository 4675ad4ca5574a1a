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

  /// Starts `rm -rf` in the background and does not wait for it.
  ///
  /// A value may be released on one of the Swift pool's threads, which a slow disk would
  /// then hold up (TestTraits' `BlockingTrait` says why that stalls every test). `sh`
  /// starts `rm` and exits at once, so the wait here is for `sh` alone; `rm` finishes on
  /// its own, even when this process ends first, and is reaped by init.
  deinit {
    let starter = try? Subprocess.spawn(
      "sh", arguments: ["-c", "rm -rf -- \"$0\" &", path], captureOutput: false)
    starter?.wait()
  }

  /// The path of `name` inside the directory.
  package func path(_ name: String) -> String { path + "/" + name }
}
