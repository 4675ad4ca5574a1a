public import ExtensionItems
import Foundation

/// The share extension's two `Info.plist` files, built in so the executable needs no
/// resources; `Examples/ShareExtension/Info.plist` and `Info-Images.plist` are the same text
/// (a test checks).
public enum ShareManifests {
  /// Which built-in manifest to use.
  public enum Choice: String, CaseIterable, Sendable {
    /// The iOS original's rule (`Protocol/handoff.md` §6): at most one web URL, one web page,
    /// and text.
    case seed
    /// The iOS original's rule plus up to five images.
    case images
  }

  /// The manifest for a choice.
  ///
  /// - Parameter choice: Which manifest.
  public static func manifest(_ choice: Choice) -> ExtensionManifest {
    let text = choice == .seed ? seedText : imagesText
    do {
      return try ExtensionManifest(propertyList: Data(text.utf8))
    } catch {
      fatalError("the built-in \(choice) manifest does not parse: \(error)")
    }
  }

  /// `Examples/ShareExtension/Info.plist`: the seed's activation rule.
  public static let seedText = manifestText(extraRules: "")

  /// `Examples/ShareExtension/Info-Images.plist`: the seed's rule and up to five images.
  public static let imagesText = manifestText(
    extraRules: "        <key>NSExtensionActivationSupportsImageWithMaxCount</key>\n"
      + "        <integer>5</integer>\n")

  /// The extension's `Info.plist`, with `extraRules` (whole lines) added to the seed's
  /// activation rule; the two manifests differ only there.
  private static func manifestText(extraRules: String) -> String {
    """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    <dict>
      <key>CFBundleIdentifier</key>
      <string>org.notifybus.example.readlater.share</string>
      <key>NSExtension</key>
      <dict>
        <key>NSExtensionAttributes</key>
        <dict>
          <key>NSExtensionActivationRule</key>
          <dict>
            <key>NSExtensionActivationSupportsWebURLWithMaxCount</key>
            <integer>1</integer>
            <key>NSExtensionActivationSupportsWebPageWithMaxCount</key>
            <integer>1</integer>
            <key>NSExtensionActivationSupportsText</key>
            <true/>
    \(extraRules)      </dict>
        </dict>
        <key>NSExtensionMainStoryboard</key>
        <string>MainInterface</string>
        <key>NSExtensionPointIdentifier</key>
        <string>com.apple.share-services</string>
      </dict>
    </dict>
    </plist>
    """
  }
}
