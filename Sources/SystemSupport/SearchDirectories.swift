#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

extension BaseDirectories {
  /// `$XDG_DATA_DIRS`'s absolute entries in order, else `/usr/local/share` and `/usr/share`:
  /// where installed data (desktop entries, D-Bus service files) is looked up after
  /// ``dataHome``.
  package var dataDirectories: [String] {
    searchPath("XDG_DATA_DIRS", default: ["/usr/local/share", "/usr/share"])
  }

  /// `$XDG_CONFIG_HOME`, else `~/.config`.
  package var configHome: String? {
    guard let value = Environment.value("XDG_CONFIG_HOME"), value.hasPrefix("/") else {
      return home.map { $0 + "/.config" }
    }
    return value
  }

  /// `$XDG_CONFIG_DIRS`'s absolute entries in order, else `/etc/xdg`.
  package var configDirectories: [String] { searchPath("XDG_CONFIG_DIRS", default: ["/etc/xdg"]) }

  private func searchPath(_ name: String, default fallback: [String]) -> [String] {
    let entries = (Environment.value(name) ?? "").split(separator: ":").map(String.init)
      .filter { $0.hasPrefix("/") }
    return entries.isEmpty ? fallback : entries
  }
}

/// The regular files below `directory` whose names end with `suffix`, as paths relative to
/// it (`kde/app.desktop`), sorted; subdirectories are searched to `depth` levels.
///
/// Symbolic links are followed (installed data is often linked into place). A directory
/// that does not exist or cannot be read yields nothing: these are search paths, most of
/// whose entries are absent.
package func regularFiles(below directory: String, suffix: String, depth: Int = 3) -> [String] {
  guard let stream = opendir(directory) else { return [] }
  var names: [String] = []
  while let entry = readdir(stream) {
    // The name is read in place: an entry can be shorter than `struct dirent` (see
    // Directory's listing), so the entry is never copied.
    let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 19
    let start = UnsafeRawPointer(entry).advanced(by: offset)
    let name = String(cString: start.assumingMemoryBound(to: CChar.self))
    if name != "." && name != ".." { names.append(name) }
  }
  closedir(stream)
  var result: [String] = []
  for name in names.sorted() {
    var info = stat()
    guard stat(directory + "/" + name, &info) == 0 else { continue }
    switch info.st_mode & S_IFMT {
    case S_IFREG where name.hasSuffix(suffix):
      result.append(name)
    case S_IFDIR where depth > 0:
      result += regularFiles(below: directory + "/" + name, suffix: suffix, depth: depth - 1)
        .map { name + "/" + $0 }
    default:
      break
    }
  }
  return result
}

/// Sends this process's standard output and standard error to the end of the file at
/// `path` (created 0600 when missing, never through a symbolic link at `path`): the log of
/// a program the bus starts with no terminal.
///
/// - Throws: ``FileSystemError`` naming the file when it cannot be opened.
package func redirectStandardStreams(appendingTo path: String) throws(FileSystemError) {
  let flags = O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC
  let fd: CInt
  do {
    fd = try retryingOnInterrupt { open(path, flags, 0o600) }
  } catch {
    throw FileSystemError(.systemCall("open", error), path: path, action: "open the log")
  }
  dup2(fd, 1)
  dup2(fd, 2)
  close(fd)
}
