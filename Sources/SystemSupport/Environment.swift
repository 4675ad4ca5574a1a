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

}
