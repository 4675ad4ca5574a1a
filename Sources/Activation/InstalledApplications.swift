import SystemSupport

/// An installed application: a desktop entry found in an `applications` directory.
public struct InstalledApplication: Sendable, Hashable {
  /// The desktop file id: the path below `applications/` with `/` made `-`
  /// (`org.notifybus.ReadLater.desktop`).
  public var desktopID: String
  /// The file.
  public var path: String
  /// Its contents.
  public var entry: DesktopEntry

  /// The application id D-Bus activation uses, when the entry is `DBusActivatable=true`
  /// and its desktop file id is a valid one (`org.notifybus.ReadLater`).
  public var dbusID: ApplicationID? {
    guard entry.isDBusActivatable, desktopID.hasSuffix(".desktop") else { return nil }
    return try? ApplicationID(String(desktopID.dropLast(".desktop".count)))
  }
}

/// Where installed applications and their URL and MIME type associations are found: the
/// `applications` directories of the XDG data directories, and the `mimeapps.list` files
/// of the freedesktop MIME Applications Associations specification.
///
/// ```swift
/// let handler = try ApplicationDirectories.current.handler(forScheme: "readlater")
/// handler.dbusID   // org.notifybus.ReadLater
/// ```
public struct ApplicationDirectories: Sendable, Hashable {
  /// The data directories, most important first (`$XDG_DATA_HOME`, `$XDG_DATA_DIRS`).
  ///
  /// Desktop entries are in `applications/` below each.
  public var dataDirectories: [String]
  /// The configuration directories, most important first: `$XDG_CONFIG_HOME`, then
  /// `$XDG_CONFIG_DIRS`.
  public var configDirectories: [String]
  /// The desktops named by `$XDG_CURRENT_DESKTOP`, lowercased, for `DESKTOP-mimeapps.list`.
  public var desktops: [String]

  /// Explicit directories (for tests and tools).
  public init(dataDirectories: [String], configDirectories: [String], desktops: [String] = []) {
    self.dataDirectories = dataDirectories
    self.configDirectories = configDirectories
    self.desktops = desktops
  }

  /// The directories this process's environment names, with the XDG defaults.
  public static var current: ApplicationDirectories {
    let base = BaseDirectories()
    return ApplicationDirectories(
      dataDirectories: (base.dataHome.map { [$0] } ?? []) + base.dataDirectories,
      configDirectories: (base.configHome.map { [$0] } ?? []) + base.configDirectories,
      desktops: (Environment.value("XDG_CURRENT_DESKTOP") ?? "").split(separator: ":")
        .map { $0.lowercased() })
  }

  /// The `mimeapps.list` files in the order the specification gives them, most important
  /// first: in each configuration directory, then in each data directory's `applications/`,
  /// the desktop-specific ones before the plain one.
  public var associationFiles: [String] {
    let directories = configDirectories + dataDirectories.map { $0 + "/applications" }
    return directories.flatMap { directory in
      desktops.map { "\(directory)/\($0)-mimeapps.list" } + ["\(directory)/mimeapps.list"]
    }
  }

  /// The installed applications, each desktop file id once (the first found wins, and a
  /// `Hidden=true` entry hides the id), with the entries that did not parse.
  public func installedApplications() -> (
    applications: [InstalledApplication],
    unreadable: [DesktopEntryError]
  ) {
    var seen: Set<String> = []
    var applications: [InstalledApplication] = []
    var unreadable: [DesktopEntryError] = []
    for data in dataDirectories {
      let directory = data + "/applications"
      for relative in regularFiles(below: directory, suffix: ".desktop") {
        let id = relative.replacing("/", with: "-")
        guard seen.insert(id).inserted else { continue }
        let path = directory + "/" + relative
        do {
          let entry = try Self.read(path)
          if !entry.isHidden {
            applications.append(InstalledApplication(desktopID: id, path: path, entry: entry))
          }
        } catch {
          unreadable.append(error)
        }
      }
    }
    return (applications, unreadable)
  }

  /// The application that opens URLs of `scheme` (MIME type `x-scheme-handler/SCHEME`).
  ///
  /// The first installed default of `[Default Applications]` in ``associationFiles``;
  /// else the first of the `[Added Associations]` and then of the installed entries whose
  /// `MimeType=` lists the type, leaving out those in `[Removed Associations]`.
  ///
  /// - Throws: ``ActivationError`` with code ``ActivationError/Code/noHandler``, naming the
  ///   scheme, the directories searched and any entry that could not be read.
  public func handler(forScheme scheme: String) throws(ActivationError) -> InstalledApplication {
    let type = "x-scheme-handler/" + scheme.lowercased()
    let (applications, unreadable) = installedApplications()
    if let found = handler(forType: type, among: applications) { return found }
    var message =
      "No installed application handles \(scheme): URLs: no desktop entry with "
      + "MimeType=\(type) in "
      + dataDirectories.map { $0 + "/applications" }.joined(separator: ", ")
    if !unreadable.isEmpty {
      message += "; skipped: " + unreadable.map(\.description).joined(separator: "; ")
    }
    throw ActivationError(.noHandler, message)
  }

  func handler(forType type: String, among applications: [InstalledApplication])
    -> InstalledApplication?
  {
    let byID = Dictionary(applications.map { ($0.desktopID, $0) }) { first, _ in first }
    var added: [String] = []
    var removed: Set<String> = []
    for path in associationFiles {
      guard let list = try? Self.read(path) else { continue }
      for id in (try? list.strings(type, in: "Default Applications")) ?? [] {
        if let application = byID[id] { return application }
      }
      added += ((try? list.strings(type, in: "Added Associations")) ?? [])
        .filter { !removed.contains($0) }
      removed.formUnion((try? list.strings(type, in: "Removed Associations")) ?? [])
    }
    for id in added {
      if let application = byID[id] { return application }
    }
    return applications.first {
      !removed.contains($0.desktopID) && $0.entry.mimeTypes.contains(type)
    }
  }

  static func read(_ path: String) throws(DesktopEntryError) -> DesktopEntry {
    let bytes: [UInt8]
    do {
      bytes = try FileDescriptor<FileSystemError>.readRegularFile(
        path, limit: DesktopEntry.maximumSize + 1)
    } catch {
      throw DesktopEntryError(path: path, line: nil, "cannot be read: \(error)")
    }
    return try DesktopEntry(parsing: bytes, path: path)
  }
}
