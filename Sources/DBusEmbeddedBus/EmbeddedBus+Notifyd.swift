import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

extension EmbeddedBus {
  /// The user's runtime directory: `$XDG_RUNTIME_DIR`, else `/run/user/<uid>` when that is
  /// a directory of this user's (systemd-logind makes it for every logged-in user, and
  /// keeps it while a session or lingering lasts), else `nil`.
  package static var userRuntimeDirectory: String? {
    if let runtime = BaseDirectories().runtimeDirectory { return runtime }
    return ownedDirectory("/run/user/\(geteuid())")
  }

  /// `path` when it is a real directory owned by this user that no one else may write.
  package static func ownedDirectory(_ path: String) -> String? {
    var info = stat()
    guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == geteuid(),
      info.st_mode & 0o022 == 0
    else { return nil }
    return path
  }

  /// The bus name of `notifyd`, which the embedded bus can start on demand.
  static let notifydName = "org.notifybus.Notify1"

  /// The first line of a service file the embedded bus wrote itself; only such files are
  /// ever replaced or removed.
  static let generatedMarker = "# Written by the NotifyBus embedded bus"

  /// Makes sure the embedded bus can start `notifyd`, with no setup step.
  ///
  /// When no directory the bus reads holds `org.notifybus.Notify1.service` and a `notifyd`
  /// sits beside the running program (a clone's `.build/debug`, a `--prefix` install), a
  /// service file for that `notifyd` is written into ``serviceDirectory``. A file written
  /// this way is removed once an installed one appears (the package's), and replaced when
  /// the `notifyd` it names is gone. Files written by anyone else are left alone.
  ///
  /// Errors are ignored: without the file, state calls fail with status 9 and the tools
  /// say how to start notifyd.
  static func provideNotifydService() {
    let name = notifydName + ".service"
    guard let directory = try? Directory<FileSystemError>.openPrivate(serviceDirectory) else {
      return
    }
    var existing: String?
    if let file = try? directory.openFile(name, flags: O_RDONLY),
      let bytes = try? file.readToEnd(limit: 65_536)
    {
      existing = String(decoding: bytes, as: UTF8.self)
    }
    if let existing, !existing.hasPrefix(generatedMarker) { return }
    if installedServiceDirectories.contains(where: { access($0 + "/" + name, F_OK) == 0 }) {
      if existing != nil { try? directory.remove(name) }
      return
    }
    if let existing, let named = executable(inServiceFile: existing), access(named, X_OK) == 0 {
      return
    }
    guard let notifyd = siblingExecutable("notifyd") else {
      if existing != nil { try? directory.remove(name) }
      return
    }
    try? directory.replaceFile(name, with: Array(notifydServiceFile(executable: notifyd).utf8))
  }

  /// The text of a generated service file for the `notifyd` at `executable`.
  static func notifydServiceFile(executable: String) -> String {
    """
    \(generatedMarker), for the notifyd beside the program that started it;
    # removed once a service file for org.notifybus.Notify1 is installed (see notifyd(8)).
    [D-BUS Service]
    Name=\(notifydName)
    Exec=\(quotedExecWord(executable))

    """
  }

  /// The session service directories `dbus-daemon` reads besides ``serviceDirectory``
  /// (`<standard_session_servicedirs/>`), where a package or a user installs service files.
  static var installedServiceDirectories: [String] {
    var result: [String] = []
    let base = BaseDirectories()
    if let runtime = base.runtimeDirectory { result.append(runtime + "/dbus-1/services") }
    if let dataHome = base.dataHome { result.append(dataHome + "/dbus-1/services") }
    let dataDirectories = Environment.value("XDG_DATA_DIRS") ?? "/usr/local/share:/usr/share"
    for directory in dataDirectories.split(separator: ":") where directory.hasPrefix("/") {
      result.append(directory + "/dbus-1/services")
    }
    result.append("/usr/share/dbus-1/services")
    return result
  }

  /// The absolute path of `name` in the running program's directory, when it is an
  /// executable file there.
  static func siblingExecutable(_ name: String) -> String? {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard length > 0 else { return nil }
    let program = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard let slash = program.lastIndex(of: "/") else { return nil }
    let candidate = program[..<slash] + "/" + name
    var info = stat()
    guard stat(candidate, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
      access(candidate, X_OK) == 0
    else { return nil }
    return String(candidate)
  }

  /// The program an `Exec=` line of `text` starts.
  static func executable(inServiceFile text: String) -> String? {
    for line in text.split(separator: "\n") where line.hasPrefix("Exec=") {
      var value = line.dropFirst("Exec=".count)
      if value.hasPrefix("\"") {
        value = value.dropFirst()
        var result = ""
        var escaped = false
        for character in value {
          if escaped {
            result.append(character)
            escaped = false
          } else if character == "\\" {
            escaped = true
          } else if character == "\"" {
            return result
          } else {
            result.append(character)
          }
        }
        return nil
      }
      return String(value.split(separator: " ").first ?? "")
    }
    return nil
  }

  /// An `Exec=` word: double-quoted, with `"` and `\` escaped, when it is empty or holds a
  /// blank, a quote or a backslash.
  package static func quotedExecWord(_ word: String) -> String {
    guard word.contains(where: { " \t\"'\\".contains($0) }) || word.isEmpty else { return word }
    var result = "\""
    for character in word {
      if character == "\"" || character == "\\" { result.append("\\") }
      result.append(character)
    }
    return result + "\""
  }
}
