public import ExtensionItems
public import Foundation

/// The share extension's two `Info.plist` files: `Manifests/Info.plist` and
/// `Manifests/Info-Images.plist`, resources of this target, installed next to the
/// executable's prefix as `share/notifybus/share-extension/` (`Protocol/packaging.md`).
public enum ShareManifests {
  /// Which built-in manifest to use.
  public enum Choice: String, CaseIterable, Sendable {
    /// The iOS original's rule (`Protocol/handoff.md` §6): at most one web URL, one web page,
    /// and text (`Info.plist`).
    case seed
    /// The iOS original's rule plus up to five images (`Info-Images.plist`).
    case images
  }

  /// The manifest for a choice.
  ///
  /// - Parameter choice: Which manifest.
  public static func manifest(_ choice: Choice) -> ExtensionManifest {
    do {
      return try ExtensionManifest(propertyList: Data(contentsOf: url(choice)))
    } catch {
      fatalError("the built-in \(choice) manifest does not read: \(error)")
    }
  }

  /// The file of a choice: the installed one, `PREFIX/share/notifybus/share-extension/`
  /// for an executable in `PREFIX/bin`, else the build's resource bundle.
  ///
  /// - Parameter choice: Which manifest.
  public static func url(_ choice: Choice) -> URL {
    let name = choice == .seed ? "Info" : "Info-Images"
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    let installed = executable.deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("share/notifybus/share-extension/\(name).plist")
    if FileManager.default.fileExists(atPath: installed.path) { return installed }
    guard
      let url = Bundle.module.url(
        forResource: name, withExtension: "plist", subdirectory: "Manifests")
    else { fatalError("the resource Manifests/\(name).plist is missing") }
    return url
  }
}
