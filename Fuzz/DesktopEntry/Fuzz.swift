import Activation

/// Feeds arbitrary bytes to the desktop-entry (and `mimeapps.list`) parser.
///
/// Parsing must never crash; a parsed file has unique group names and keys within each
/// group, and every typed lookup either answers or throws.
public func fuzz(_ bytes: [UInt8]) {
  guard let entry = try? DesktopEntry(parsing: bytes, path: "fuzz.desktop") else { return }
  precondition(Set(entry.groups.map(\.name)).count == entry.groups.count, "a repeated group")
  for group in entry.groups {
    precondition(Set(group.entries.map(\.key)).count == group.entries.count, "a repeated key")
    for line in group.entries {
      _ = try? entry.string(line.key, in: group.name)
      _ = try? entry.strings(line.key, in: group.name)
      _ = try? entry.boolean(line.key, in: group.name)
    }
  }
  _ = (entry.isDBusActivatable, entry.isHidden, entry.mimeTypes)
  if let name = try? entry.string("Name") { _ = try? ApplicationID(name) }
}
