public import Foundation
import SystemSupport

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
    try container.checkWritable()
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
    let directories = BaseDirectories { environment[$0] }
    let explicit: String?
    do {
      explicit = try directories.override(groupsDirectoryVariable)
    } catch {
      throw ContainerError(
        code: .invalidPath, path: error.path,
        message: "\(groupsDirectoryVariable) must be an absolute path, not '\(error.path)'.")
    }
    if let explicit { return explicit }
    guard let data = directories.dataHome else {
      throw ContainerError(
        code: .invalidPath, path: environment["HOME"] ?? "",
        message: "Cannot locate group containers: HOME is not an absolute path and "
          + "neither \(groupsDirectoryVariable) nor XDG_DATA_HOME is set.")
    }
    return data + "/notifybus/groups"
  }

  /// Walks `path` from `/` without following links, creating missing components 0700
  /// (``SystemSupport/Directory/openPrivate(_:)``).
  static func openGroupsDirectory(_ path: String) throws(ContainerError) -> Directory {
    try Directory.openPrivate(path)
  }

  /// Replaces (or creates) a file, mode 0600, in a private directory below the container
  /// (created 0700 when missing), atomically and without following symbolic links.
  ///
  /// - Parameters:
  ///   - name: The file name, a single safe component.
  ///   - bytes: The contents.
  ///   - components: The directory below the container, for example `["handoff-rejected"]`.
  /// - Returns: The file's path.
  package func replaceFile(_ name: String, with bytes: [UInt8], in components: [String])
    throws(ContainerError) -> String
  {
    let directory = try privateDirectory(components)
    try directory.replaceFile(name, with: bytes)
    return directory.childPath(name)
  }

  /// Opens (creating 0700 when missing) a private directory below the container.
  func privateDirectory(_ components: [String]) throws(ContainerError) -> Directory {
    var current = try directory.reopen()
    for name in components { current = try current.privateDirectory(name) }
    return current
  }
}
