/// A freedesktop desktop entry (`.desktop` file) that puts a share extension where Linux
/// users share from: a file manager's "Open With", a browser's handlers.
///
/// ``init(manifest:command:)`` derives it from the extension's `Info.plist`: the name, and
/// the `MimeType=` list of ``ActivationRule/mimeTypes(registry:)``. ``text`` is the file, valid
/// for `desktop-file-validate`. The layout is `Protocol/desktop-entries.md`.
public struct ExtensionDesktopEntry: Hashable, Sendable {
  /// The desktop file ID without `.desktop`: the manifest's `CFBundleIdentifier`.
  public var identifier: String
  /// `Name=`.
  public var name: String
  /// `Comment=`.
  public var comment: String
  /// The command line `Exec=` runs, before the `%U` field code: the executable first.
  public var command: [String]
  /// `MimeType=`, in order.
  public var mimeTypes: [String]
  /// `Terminal=`: the extension runs in a terminal, where it shows its compose sheet.
  public var terminal = true
  /// `NoDisplay=`: listed for its types ("Open With"), not in application menus.
  public var noDisplay = true
  /// `X-NotifyBus-Extension-Point=`: the manifest's `NSExtensionPointIdentifier`.
  public var extensionPoint: String

  /// The entry for an extension manifest.
  ///
  /// - Parameters:
  ///   - manifest: The extension's `Info.plist`.
  ///   - command: The command line that runs the extension, executable first; `%U` follows.
  /// - Throws: ``ExtensionDesktopEntryError`` when the manifest has no `CFBundleIdentifier` or no
  ///   activation rule, or its rule accepts nothing a launcher can hand over.
  public init(manifest: ExtensionManifest, command: [String]) throws(ExtensionDesktopEntryError) {
    guard let identifier = manifest.bundleIdentifier, !identifier.isEmpty else {
      throw ExtensionDesktopEntryError(
        "the manifest has no CFBundleIdentifier, which names the entry")
    }
    guard let rule = manifest.activationRule else {
      throw ExtensionDesktopEntryError("the manifest has no NSExtensionActivationRule")
    }
    let types = rule.mimeTypes(registry: manifest.typeRegistry)
    guard !types.isEmpty else {
      throw ExtensionDesktopEntryError(
        "the activation rule accepts no file or URL a launcher can hand over: no MimeType")
    }
    guard !command.isEmpty else { throw ExtensionDesktopEntryError("the command is empty") }
    self.identifier = identifier
    name = manifest.displayName ?? identifier
    comment = "Share with \(manifest.displayName ?? identifier)"
    self.command = command
    mimeTypes = types
    extensionPoint = manifest.pointIdentifier
  }

  /// The file name: the identifier and `.desktop`.
  public var fileName: String { identifier + ".desktop" }

  /// The file's text.
  public var text: String {
    var lines = [
      "[Desktop Entry]",
      "Type=Application",
      "Version=1.4",
      "Name=" + Self.escaped(name),
      "Comment=" + Self.escaped(comment),
      "Exec=" + Self.escaped(Self.execLine(command) + " %U"),
    ]
    if command[0].hasPrefix("/") { lines.append("TryExec=" + Self.escaped(command[0])) }
    lines += [
      "Terminal=\(terminal)",
      "NoDisplay=\(noDisplay)",
      "MimeType=" + mimeTypes.map { Self.escaped($0) + ";" }.joined(),
      "X-NotifyBus-Extension-Point=" + Self.escaped(extensionPoint),
    ]
    return lines.joined(separator: "\n") + "\n"
  }

  /// The arguments as the `Exec` key's quoting rules write them, before string escaping:
  /// an argument with a reserved character is double-quoted, with `"`, `` ` ``, `$` and `\`
  /// backslash-escaped inside; `%` is doubled.
  static func execLine(_ arguments: [String]) -> String {
    arguments.map { argument in
      let reserved = " \t\n\"'\\><~|&;$*?#()`="
      guard argument.isEmpty || argument.contains(where: { reserved.contains($0) }) else {
        return argument.split(separator: "%", omittingEmptySubsequences: false)
          .joined(separator: "%%")
      }
      var quoted = "\""
      for character in argument {
        if "\"`$\\".contains(character) { quoted.append("\\") }
        quoted.append(character)
        if character == "%" { quoted.append("%") }
      }
      return quoted + "\""
    }.joined(separator: " ")
  }

  /// A value as the `string` type escapes it: `\s` is not needed inside, `\n`, `\t`, `\r`
  /// and `\\` are.
  static func escaped(_ value: String) -> String {
    var result = ""
    for character in value {
      switch character {
      case "\\": result += "\\\\"
      case "\n": result += "\\n"
      case "\t": result += "\\t"
      case "\r": result += "\\r"
      default: result.append(character)
      }
    }
    return result
  }
}

/// Why a desktop entry cannot be made from a manifest.
public struct ExtensionDesktopEntryError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What is missing.
  public var description: String

  /// Creates an error.
  public init(_ description: String) { self.description = description }
}
