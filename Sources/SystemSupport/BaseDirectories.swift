#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The XDG base directories, resolved by one rule set for every part of NotifyBus.
///
/// - A variable (`XDG_DATA_HOME`, `XDG_STATE_HOME`, `XDG_RUNTIME_DIR`) is used when it is
///   set to an absolute path; an empty or relative value is ignored, as the XDG Base
///   Directory Specification says.
/// - Otherwise the data and state homes are below the home directory: `$HOME` when it is
///   absolute, else the password database's entry for the effective user.
/// - There is no fallback runtime directory here; the embedded bus picks its own.
///
/// Each resolution takes the environment as a lookup function, so callers (and tests) can
/// pass their own.
package struct BaseDirectories: Sendable {
  /// Looks up an environment variable; `nil` when unset.
  package typealias Lookup = @Sendable (String) -> String?

  private let lookup: Lookup

  /// Resolves from `lookup`, by default this process's environment.
  package init(lookup: @escaping Lookup = { Environment.value($0) }) { self.lookup = lookup }

  /// `value` when it is an absolute path.
  private func absolute(_ name: String) -> String? {
    guard let value = lookup(name), value.hasPrefix("/") else { return nil }
    return value
  }

  /// The home directory: `$HOME` when absolute, else the password database's entry for
  /// the effective user, when that is absolute.
  package var home: String? {
    if let home = absolute("HOME") { return home }
    guard let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir else {
      return nil
    }
    let home = String(cString: directory)
    return home.hasPrefix("/") ? home : nil
  }

  /// `$XDG_DATA_HOME`, else `~/.local/share`.
  package var dataHome: String? { absolute("XDG_DATA_HOME") ?? home.map { $0 + "/.local/share" } }

  /// `$XDG_STATE_HOME`, else `~/.local/state`.
  package var stateHome: String? {
    absolute("XDG_STATE_HOME") ?? home.map { $0 + "/.local/state" }
  }

  /// `$XDG_RUNTIME_DIR`, when it is absolute.
  package var runtimeDirectory: String? { absolute("XDG_RUNTIME_DIR") }

  /// `name`'s value when it is set and absolute; `nil` when unset or empty.
  ///
  /// - Throws: ``FileSystemError`` with ``FileSystemError/Problem/invalidPath(_:)`` when
  ///   it is set to a relative path: an explicit override is never silently ignored.
  package func override(_ name: String) throws(FileSystemError) -> String? {
    guard let value = lookup(name), !value.isEmpty else { return nil }
    guard value.hasPrefix("/") else {
      throw FileSystemError(
        .invalidPath("\(name) must be an absolute path"), path: value, action: "use")
    }
    return value
  }
}

/// Splits an absolute or relative file path into its directory and its last component.
///
/// `"/a/b/c"` gives `("/a/b", "c")`, `"/c"` gives `("/", "c")`; `nil` when the path ends
/// with `/`, is empty, or its last component is `.` or `..`.
package func splitFilePath(_ path: String) -> (directory: String, name: String)? {
  guard let slash = path.lastIndex(of: "/") else {
    return path.isEmpty || path == "." || path == ".." ? nil : (".", path)
  }
  let name = String(path[path.index(after: slash)...])
  guard !name.isEmpty, name != ".", name != ".." else { return nil }
  let directory = slash == path.startIndex ? "/" : String(path[..<slash])
  return (directory, name)
}

/// `path` made absolute against the current directory (`getcwd`); an absolute path, or a
/// relative one when the current directory cannot be read, is returned as is.
package func absolutePath(_ path: String) -> String {
  if path.hasPrefix("/") { return path }
  var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
  guard getcwd(&buffer, buffer.count) != nil else { return path }
  let directory = String(
    decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  return directory == "/" ? "/" + path : directory + "/" + path
}
