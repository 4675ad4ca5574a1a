import ExtensionItems
import Testing

struct ExtensionDesktopEntryTests {
  func manifest(_ rule: String, id: String = "org.example.share", name: String? = "Example")
    throws -> ExtensionManifest
  {
    try ExtensionManifest(
      xmlFragment: """
        <key>CFBundleIdentifier</key><string>\(id)</string>
        \(name.map { "<key>CFBundleDisplayName</key><string>\($0)</string>" } ?? "")
        <key>NSExtension</key><dict>
          <key>NSExtensionPointIdentifier</key><string>com.apple.share-services</string>
          <key>NSExtensionAttributes</key><dict><key>NSExtensionActivationRule</key>\(rule)</dict>
        </dict>
        """)
  }

  func mimeTypes(_ rule: String) throws -> [String] {
    try #require(manifest(rule).activationRule).mimeTypes()
  }

  @Test func theMIMETypesComeFromWhatTheRuleAccepts() throws {
    let images = try mimeTypes(
      "<dict><key>NSExtensionActivationSupportsImageWithMaxCount</key><integer>3</integer></dict>")
    #expect(
      images == [
        "image/jpeg", "image/jpg", "image/png", "image/tiff", "image/gif", "image/webp",
        "image/heic", "image/heif",
      ])
    let text = try mimeTypes("<dict><key>NSExtensionActivationSupportsText</key><true/></dict>")
    #expect(text.first == "text/plain")
    #expect(
      text.contains("text/html") && !text.contains("image/png") && !text.contains("text/uri-list"))
    #expect(!text.contains { $0.contains(";") })
    let web = try mimeTypes(
      "<dict><key>NSExtensionActivationSupportsWebURLWithMaxCount</key><integer>1</integer></dict>")
    #expect(web == ["text/uri-list", "x-scheme-handler/http", "x-scheme-handler/https"])
    let movies = try mimeTypes(
      "<dict><key>NSExtensionActivationSupportsMovieWithMaxCount</key><integer>1</integer></dict>")
    #expect(movies == ["video/mp4", "video/mp4v", "video/mp4v-es", "video/quicktime"])
    let files = try mimeTypes(
      "<dict><key>NSExtensionActivationSupportsFileWithMaxCount</key><integer>2</integer></dict>")
    #expect(files.contains("application/pdf") && files.contains("image/png"))
    #expect(files.last == "application/octet-stream")
    #expect(!files.contains("text/plain"))
    // v2 {File: 0, Image: 5}: images, but no other files.
    let imagesOnly = try mimeTypes(
      """
      <dict><key>NSExtensionActivationDictionaryVersion</key><integer>2</integer>
      <key>NSExtensionActivationSupportsFileWithMaxCount</key><integer>0</integer>
      <key>NSExtensionActivationSupportsImageWithMaxCount</key><integer>5</integer></dict>
      """)
    #expect(imagesOnly.contains("image/png") && !imagesOnly.contains("application/pdf"))
    #expect(!imagesOnly.contains("application/octet-stream"))
    // A predicate rule is asked the same way: Apple's PDF example.
    let pdf = try mimeTypes(
      """
      <string>SUBQUERY(extensionItems, $e, SUBQUERY($e.attachments, $a, ANY \
      $a.registeredTypeIdentifiers UTI-CONFORMS-TO "com.adobe.pdf").@count == \
      $e.attachments.@count).@count == 1</string>
      """)
    #expect(pdf == ["application/pdf"])
  }

  @Test func theEntryNamesTheManifestAndQuotesTheCommand() throws {
    let entry = try ExtensionDesktopEntry(
      manifest: manifest("<dict><key>NSExtensionActivationSupportsText</key><true/></dict>"),
      command: ["/opt/my apps/share", "--manifest", "/a/100%/$x\"y.plist"])
    #expect(entry.fileName == "org.example.share.desktop")
    let lines = entry.text.split(separator: "\n")
    #expect(lines.first == "[Desktop Entry]")
    #expect(lines.contains("Name=Example"))
    #expect(lines.contains(#"Exec="/opt/my apps/share" --manifest "/a/100%%/\\$x\\"y.plist" %U"#))
    #expect(lines.contains("Terminal=true"))
    #expect(lines.contains("NoDisplay=true"))
    #expect(lines.contains { $0.hasPrefix("MimeType=text/plain;") && $0.hasSuffix(";") })
  }

  @Test func aManifestWithoutAnIdentifierOrARuleThatAcceptsNothingHasNoEntry() throws {
    let refusing = try manifest("<string>FALSEPREDICATE</string>")
    #expect(throws: ExtensionDesktopEntryError.self) {
      try ExtensionDesktopEntry(manifest: refusing, command: ["x"])
    }
    let nameless = try ExtensionManifest(
      xmlFragment: """
        <key>NSExtension</key><dict>
          <key>NSExtensionPointIdentifier</key><string>com.apple.share-services</string></dict>
        """)
    let error = #expect(throws: ExtensionDesktopEntryError.self) {
      try ExtensionDesktopEntry(manifest: nameless, command: ["x"])
    }
    #expect(error?.description.contains("CFBundleIdentifier") == true)
  }
}
