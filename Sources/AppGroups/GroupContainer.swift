public import Foundation
import Glibc

/// A directory shared by the processes of one App Group, like the container that
/// `FileManager.containerURL(forSecurityApplicationGroupIdentifier:)` returns on Apple systems.
///
/// The container lives at `$NOTIFYBUS_GROUPS_DIR/<identifier>` when that variable is set,
/// else at `$XDG_DATA_HOME/notifybus/groups/<identifier>` (`~/.local/share/…` by default).
/// Missing directories are created with mode 0700 on first use.
///
/// Opening is strict, and fails loudly instead of handing back a phantom location:
/// - the path is walked one component at a time with `openat(O_NOFOLLOW | O_DIRECTORY)`,
///   so no symbolic link is ever followed;
/// - every ancestor must be owned by root or by this user, and must not be writable by
///   others unless it has the sticky bit (as `/tmp` does);
/// - the groups directory and the container must be owned by this user and not writable
///   by group or others;
/// - the container must be writable by this user.
///
/// The container keeps its directory open; everything inside it is reached relative to
/// that descriptor, so renaming a parent directory later cannot redirect it.
///
/// ```swift
/// let container = try GroupContainer(identifier: "group.com.example.reader")
/// print(container.url.path)
/// ```
public final class GroupContainer: Sendable {
  /// The group this container belongs to.
  public let identifier: GroupIdentifier
  /// The container directory.
  public let url: URL
  /// The open container directory.
  let directory: Directory

  /// The environment variable that overrides where containers live.
  public static var groupsDirectoryVariable: String { "NOTIFYBUS_GROUPS_DIR" }

  /// Opens (creating on first use) the container of a group, located from the environment.
  ///
  /// - Parameter identifier: The group identifier, for example `group.com.example.reader`.
  /// - Throws: ``ContainerError`` when the identifier is invalid or the location is unsafe
  ///   or unwritable.
  public convenience init(identifier: String) throws(ContainerError) {
    try self.init(identifier: GroupIdentifier(validating: identifier))
  }

  /// Opens (creating on first use) the container of a group.
  ///
  /// - Parameters:
  ///   - identifier: The group.
  ///   - groupsDirectory: An absolute directory that holds containers; `nil` resolves it
  ///     from `environment` (see ``groupsDirectory(environment:)``).
  ///   - environment: The environment to resolve the location from.
  /// - Throws: ``ContainerError`` when the location is unsafe or unwritable.
  public init(
    identifier: GroupIdentifier, groupsDirectory: String? = nil,
    environment: [String: String] = ProcessInfo.processInfo.environment
  ) throws(ContainerError) {
    let base: String
    if let groupsDirectory {
      base = groupsDirectory
    } else {
      base = try Self.groupsDirectory(environment: environment)
    }
    let groups = try Self.openGroupsDirectory(base)
    let container = try groups.privateDirectory(identifier.rawValue)
    try Self.checkWritable(container)
    self.identifier = identifier
    self.url = URL(fileURLWithPath: container.path, isDirectory: true)
    self.directory = container
  }

  /// The container directory's path.
  public var path: String { directory.path }

  /// Resolves the directory that holds group containers.
  ///
  /// `NOTIFYBUS_GROUPS_DIR` when set and not empty; else `$XDG_DATA_HOME/notifybus/groups`
  /// when `XDG_DATA_HOME` is an absolute path (the XDG specification says to ignore a
  /// relative one); else `$HOME/.local/share/notifybus/groups`, taking the home directory
  /// from the password database when `HOME` is unset.
  ///
  /// - Parameter environment: The environment to read.
  /// - Returns: An absolute path.
  /// - Throws: ``ContainerError`` when no home directory can be found, or when
  ///   `NOTIFYBUS_GROUPS_DIR` is relative.
  public static func groupsDirectory(environment: [String: String]) throws(ContainerError)
    -> String
  {
    if let explicit = environment[groupsDirectoryVariable], !explicit.isEmpty {
      guard explicit.hasPrefix("/") else {
        throw ContainerError(
          code: .invalidPath, path: explicit,
          message: "\(groupsDirectoryVariable) must be an absolute path, not '\(explicit)'.")
      }
      return explicit
    }
    if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
      return data + "/notifybus/groups"
    }
    var home = environment["HOME"] ?? ""
    if home.isEmpty, let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir {
      home = String(cString: directory)
    }
    guard home.hasPrefix("/") else {
      throw ContainerError(
        code: .invalidPath, path: home,
        message: "Cannot locate group containers: HOME is not an absolute path and "
          + "neither \(groupsDirectoryVariable) nor XDG_DATA_HOME is set.")
    }
    return home + "/.local/share/notifybus/groups"
  }

  /// Walks `path` from `/` without following links, creating missing components 0700.
  static func openGroupsDirectory(_ path: String) throws(ContainerError) -> Directory {
    guard path.hasPrefix("/") else {
      throw ContainerError(
        code: .invalidPath, path: path,
        message: "The groups directory must be an absolute path, not '\(path)'.")
    }
    let components = path.split(separator: "/").map(String.init)
    if let bad = components.first(where: { $0 == "." || $0 == ".." }) {
      throw ContainerError(
        code: .invalidPath, path: path,
        message: "Refusing the groups directory '\(path)': it contains a '\(bad)' component. "
          + "Give a normalized absolute path.")
    }
    guard !components.isEmpty else {
      throw ContainerError(
        code: .invalidPath, path: path, message: "The groups directory cannot be '/'.")
    }
    var current = try Directory.root()
    for (index, name) in components.enumerated() {
      if index == components.count - 1 {
        return try current.privateDirectory(name)
      }
      guard let info = try current.status(of: name) else {
        current = try current.privateDirectory(name)
        continue
      }
      switch info.st_mode & S_IFMT {
      case S_IFLNK:
        throw .syscall("openat", errno: ELOOP, path: current.childPath(name), doing: "open")
      case S_IFDIR:
        break
      default:
        throw .syscall("openat", errno: ENOTDIR, path: current.childPath(name), doing: "open")
      }
      let next: Directory
      do {
        next = try current.openDirectory(name)
      } catch  where error.cause?.errno == EACCES {
        next = try current.openDirectory(name, searchOnly: true)
      }
      try checkAncestor(next)
      current = next
    }
    fatalError("unreachable: the last component returns")
  }

  /// An ancestor must be owned by root or this user, and not writable by others unless
  /// it is sticky.
  private static func checkAncestor(_ directory: borrowing Directory) throws(ContainerError) {
    let info = try directory.descriptor.status()
    guard info.st_uid == 0 || info.st_uid == geteuid() else {
      throw ContainerError(
        code: .untrustedOwner, path: directory.path,
        message: "Refusing '\(directory.path)' as part of a group container's path: it is "
          + "owned by user \(info.st_uid), neither root nor this user (\(geteuid())).")
    }
    let writableByOthers = info.st_mode & 0o022 != 0
    let sticky = info.st_mode & S_ISVTX != 0
    guard !writableByOthers || sticky else {
      throw ContainerError(
        code: .insecurePermissions, path: directory.path,
        message: "Refusing '\(directory.path)' as part of a group container's path: its mode "
          + "\(String(info.st_mode & 0o7777, radix: 8)) lets other users write to it and it is "
          + "not sticky.")
    }
  }

  private static func checkWritable(_ directory: borrowing Directory) throws(ContainerError) {
    let (result, code) = FileDescriptor.retrying {
      faccessat(directory.descriptor.rawValue, ".", W_OK | X_OK, AT_EACCESS)
    }
    guard result == 0 else {
      throw .syscall(
        "faccessat", errno: code, path: directory.path, doing: "write to the container")
    }
  }

  /// Opens (creating 0700 when missing) a private directory below the container.
  func privateDirectory(_ components: [String]) throws(ContainerError) -> Directory {
    var current = try directory.reopen()
    for name in components { current = try current.privateDirectory(name) }
    return current
  }
}
