import ExtensionItems
import Foundation
import TestSupport
import Testing

/// The `NSExtension` part of the iOS original's read-later share extension (`Protocol/handoff.md`
/// §6), verbatim.
private let seedFragment = """
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
      </dict>
    </dict>
    <key>NSExtensionMainStoryboard</key>
    <string>MainInterface</string>
    <key>NSExtensionPointIdentifier</key>
    <string>com.apple.share-services</string>
  </dict>
  """

private func plist(_ body: String) -> Data {
  Data(
    """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0"><dict>
    \(body)
    </dict></plist>
    """.utf8)
}

struct ExtensionManifestTests {
  @Test func seedManifest() throws {
    let manifest = try ExtensionManifest(xmlFragment: seedFragment)
    #expect(manifest.pointIdentifier == "com.apple.share-services")
    #expect(manifest.mainStoryboard == "MainInterface")
    #expect(manifest.principalClass == nil)
    let expected: [String: PropertyListValue] = [
      "NSExtensionActivationSupportsWebURLWithMaxCount": 1,
      "NSExtensionActivationSupportsWebPageWithMaxCount": 1,
      "NSExtensionActivationSupportsText": true,
    ]
    #expect(manifest.activationRule == .dictionary(ActivationDictionary(expected)))
    let rule = try #require(manifest.activationRule)
    let link = ExtensionItem(
      attributedContentText: "Swift on Linux",
      attachments: [ItemProvider(url: URL(string: "https://www.swift.org/blog/")!)])
    #expect(rule.evaluate([link]))
    let photo = ExtensionItem(attachments: [ItemProvider(data: Data([1]), type: .jpeg)])
    #expect(!rule.evaluate([photo]))
  }

  @Test func binaryPlistFileWithPredicateAndCustomTypes() throws {
    let info: [String: Any] = [
      "CFBundleIdentifier": "net.example.readlater.share",
      "NSExtension": [
        "NSExtensionPointIdentifier": "com.apple.share-services",
        "NSExtensionPrincipalClass": "ShareViewController",
        "NSExtensionAttributes": [
          "NSExtensionActivationRule": """
          SUBQUERY(extensionItems, $item, SUBQUERY($item.attachments, $a,
            ANY $a.registeredTypeIdentifiers UTI-CONFORMS-TO "net.example.recipe").@count >= 1
          ).@count == 1
          """
        ],
      ],
      "UTExportedTypeDeclarations": [
        [
          "UTTypeIdentifier": "net.example.recipe",
          "UTTypeConformsTo": ["public.json"],
          "UTTypeTagSpecification": [
            "public.filename-extension": "recipe", "public.mime-type": ["application/x-recipe"],
          ],
        ]
      ],
      "UTImportedTypeDeclarations": [
        ["UTTypeIdentifier": "org.other.card", "UTTypeConformsTo": "public.data"]
      ],
    ]
    let data = try PropertyListSerialization.data(
      fromPropertyList: info, format: .binary, options: 0)
    #expect(data.starts(with: Array("bplist00".utf8)))
    let temporary = TemporaryDirectory("manifest")
    let url = URL(filePath: temporary.path("Info.plist"))
    try data.write(to: url)
    let manifest = try ExtensionManifest(contentsOf: url)
    #expect(manifest.bundleIdentifier == "net.example.readlater.share")
    #expect(manifest.principalClass == "ShareViewController")
    #expect(manifest.exportedTypes.first?.filenameExtensions == ["recipe"])
    #expect(manifest.exportedTypes.first?.mimeTypes == ["application/x-recipe"])
    #expect(manifest.importedTypes.first?.conformsTo == ["public.data"])
    let registry = manifest.typeRegistry
    let recipe = registry.type(forFilenameExtension: "recipe")
    #expect(recipe == "net.example.recipe")
    let item = ExtensionItem(attachments: [ItemProvider(data: Data("{}".utf8), type: recipe)])
    let rule = try #require(manifest.activationRule)
    #expect(rule.evaluate([item], registry: registry))
    #expect(!rule.evaluate([ExtensionItem(attachments: [ItemProvider(text: "x")])]))
  }

  @Test(arguments: [
    (Data("not a plist".utf8), ExtensionManifestError.Code.unreadable, ""),
    (Data(), .unreadable, ""),
    (plist(""), .missingKey, "NSExtension"),
    (plist("<key>NSExtension</key><string>x</string>"), .wrongType, "NSExtension"),
    (
      plist("<key>NSExtension</key><dict></dict>"), .missingKey,
      "NSExtension.NSExtensionPointIdentifier"
    ),
    (
      plist(
        "<key>NSExtension</key><dict><key>NSExtensionPointIdentifier</key><integer>1</integer></dict>"
      ),
      .wrongType, "NSExtension.NSExtensionPointIdentifier"
    ),
    (
      plist(
        """
        <key>NSExtension</key><dict><key>NSExtensionPointIdentifier</key><string>p</string>
        <key>NSExtensionAttributes</key><dict><key>NSExtensionActivationRule</key>
        <string>SUBQUERY(extensionItems, $x</string></dict></dict>
        """), .invalidActivationRule,
      "NSExtension.NSExtensionAttributes.NSExtensionActivationRule"
    ),
    (
      plist(
        """
        <key>NSExtension</key><dict><key>NSExtensionPointIdentifier</key><string>p</string>
        <key>NSExtensionAttributes</key><dict><key>NSExtensionActivationRule</key>
        <integer>3</integer></dict></dict>
        """), .wrongType, "NSExtension.NSExtensionAttributes.NSExtensionActivationRule"
    ),
    (
      plist(
        """
        <key>NSExtension</key><dict><key>NSExtensionPointIdentifier</key><string>p</string></dict>
        <key>UTExportedTypeDeclarations</key><array><dict><key>UTTypeConformsTo</key>
        <string>public.data</string></dict></array>
        """), .missingKey, "UTExportedTypeDeclarations[0].UTTypeIdentifier"
    ),
    (Data(count: ExtensionManifest.maximumSize + 1), .tooLarge, ""),
  ])
  func malformedManifests(_ data: Data, _ code: ExtensionManifestError.Code, _ keyPath: String) {
    do {
      let manifest = try ExtensionManifest(propertyList: data)
      Issue.record("read \(manifest)")
    } catch {
      #expect(error.code == code, "\(error)")
      #expect(error.keyPath == keyPath, "\(error)")
    }
  }

  @Test func truncatedBinaryManifestsNeverCrash() throws {
    let manifest = try ExtensionManifest(xmlFragment: seedFragment)
    let object: [String: Any] = [
      "NSExtension": PropertyListValue.dictionary(manifest.extensionDictionary).propertyListObject
    ]
    let data = try PropertyListSerialization.data(
      fromPropertyList: object, format: .binary, options: 0)
    #expect(try ExtensionManifest(propertyList: data) == manifest)
    for length in 0..<data.count {
      #expect(throws: ExtensionManifestError.self) {
        try ExtensionManifest(propertyList: data.prefix(length))
      }
    }
  }
}
