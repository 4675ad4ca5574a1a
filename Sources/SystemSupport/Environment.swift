#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Read access to the process environment without Foundation.
package enum Environment {
  /// The value of the environment variable `name`, or `nil` when it is unset or empty.
  package static func value(_ name: String) -> String? {
    guard let raw = getenv(name) else { return nil }
    let value = String(cString: raw)
    return value.isEmpty ? nil : value
  }

  /// The home directory: `$HOME`, else the password database's entry for this user.
  package static var homeDirectory: String? {
    if let home = value("HOME") { return home }
    guard let entry = getpwuid(getuid()), let dir = entry.pointee.pw_dir else { return nil }
    return String(cString: dir)
  }
}
