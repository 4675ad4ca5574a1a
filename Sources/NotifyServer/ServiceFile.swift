import DBus
import NotifyServerFiles
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The D-Bus service file that lets the bus start `notifyd` on demand (activation).
///
/// ```
/// [D-BUS Service]
/// Name=org.notifybus.Notify1
/// Exec=/usr/local/bin/notifyd --no-persist
/// ```
public struct ServiceFile: Hashable, Sendable {
  /// The file name the bus looks for.
  public static let fileName = "org.notifybus.Notify1.service"

  /// The absolute path of `notifyd`.
  public var executable: String
  /// Arguments passed to it.
  public var arguments: [String]

  /// Describes a service file.
  public init(executable: String, arguments: [String] = []) {
    self.executable = executable
    self.arguments = arguments
  }

  /// The file's text.
  public var text: String {
    let command = ([executable] + arguments).map(Self.quoted).joined(separator: " ")
    return "[D-BUS Service]\nName=\(NotifydInterface.busName)\nExec=\(command)\n"
  }

  /// Writes the file into `directory` (created, mode 0700, when missing), atomically.
  ///
  /// - Returns: The file's path.
  /// - Throws: ``NotifydError`` with code ``NotifydError/Code/serviceFile``.
  public func install(in directory: String) throws(NotifydError) -> String {
    let path = directory + "/" + Self.fileName
    do {
      try StateStore.makeDirectories(directory, path: path)
    } catch {
      throw NotifydError(.serviceFile, error.message)
    }
    let temporary = path + ".tmp-\(getpid())"
    let bytes = Array(text.utf8)
    let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
    guard fd >= 0 else {
      throw NotifydError(.serviceFile, "cannot create \(temporary): \(Errno.current)")
    }
    let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    guard written == bytes.count, rename(temporary, path) == 0 else {
      let error = Errno.current
      unlink(temporary)
      throw NotifydError(.serviceFile, "cannot write \(path): \(error)")
    }
    return path
  }

  /// The running executable's absolute path (`/proc/self/exe`).
  public static func currentExecutable() -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard length > 0 else { return CommandLine.arguments.first ?? "notifyd" }
    return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// An `Exec=` word: quoted when it holds a space, a quote or a backslash.
  static func quoted(_ word: String) -> String { EmbeddedBus.quotedExecWord(word) }
}
