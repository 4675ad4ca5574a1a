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

  /// Writes the file, mode 0600, into `directory` (created with mode 0700 when missing,
  /// never through a symbolic link), atomically.
  ///
  /// - Returns: The file's path.
  /// - Throws: ``NotifydError`` with code ``NotifydError/Code/serviceFile``.
  public func install(in directory: String) throws(NotifydError) -> String {
    do throws(FileSystemError) {
      let open = try Directory<FileSystemError>.openPrivate(directory)
      try open.replaceFile(Self.fileName, with: Array(text.utf8))
      return open.childPath(Self.fileName)
    } catch {
      throw NotifydError(.serviceFile, "cannot install the service file: \(error)")
    }
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
