import Activation
import BusTestSupport
import Testing

/// Scheme handlers found in temporary XDG directories.
@Suite struct HandlerLookupTests {
  let temporary = TemporaryDirectory()
  var home: String { temporary.path("data-home") }
  var system: String { temporary.path("data-dir") }
  var config: String { temporary.path("config") }
  var directories: ApplicationDirectories {
    ApplicationDirectories(
      dataDirectories: [home, system], configDirectories: [config], desktops: ["test"])
  }

  func install(_ id: String, in data: String, _ body: String) {
    let path = data + "/applications/" + id
    makeDirectories(String(path[..<path.lastIndex(of: "/")!]))
    writeFile(path, "[Desktop Entry]\nType=Application\nName=\(id)\nExec=true\n" + body)
  }

  @Test func findsTheEntryListingTheScheme() throws {
    install("org.example.Other.desktop", in: home, "MimeType=text/plain;\n")
    install(
      "org.example.Reader.desktop", in: system,
      "MimeType=x-scheme-handler/reader;\nDBusActivatable=true\n")
    let handler = try directories.handler(forScheme: "reader")
    #expect(handler.desktopID == "org.example.Reader.desktop")
    #expect(handler.dbusID == "org.example.Reader")
    #expect(handler.path == system + "/applications/org.example.Reader.desktop")
    // Schemes are case-insensitive.
    #expect(try directories.handler(forScheme: "READER").desktopID == "org.example.Reader.desktop")
  }

  @Test func theDataHomeShadowsAndHiddenHides() throws {
    install("org.example.Reader.desktop", in: system, "MimeType=x-scheme-handler/reader;\n")
    install("org.example.Reader.desktop", in: home, "Hidden=true\n")
    #expect { try directories.handler(forScheme: "reader") } throws: {
      ($0 as? ActivationError)?.code == .noHandler
    }
  }

  @Test func subdirectoriesMakeDashedIDsAndNonActivatableEntriesHaveNoDBusID() throws {
    install("vendor/reader.desktop", in: home, "MimeType=x-scheme-handler/reader;\n")
    let handler = try directories.handler(forScheme: "reader")
    #expect(handler.desktopID == "vendor-reader.desktop")
    #expect(handler.dbusID == nil)
  }

  @Test func mimeappsDefaultsWinAndRemovedAssociationsDrop() throws {
    install("a.desktop", in: home, "MimeType=x-scheme-handler/reader;\n")
    install("b.desktop", in: system, "MimeType=x-scheme-handler/reader;\n")
    makeDirectories(config)
    writeFile(
      config + "/mimeapps.list",
      "[Default Applications]\nx-scheme-handler/reader=missing.desktop;b.desktop;\n")
    #expect(try directories.handler(forScheme: "reader").desktopID == "b.desktop")
    writeFile(
      config + "/mimeapps.list", "[Removed Associations]\nx-scheme-handler/reader=a.desktop;\n")
    #expect(try directories.handler(forScheme: "reader").desktopID == "b.desktop")
    // The desktop's own list comes first.
    writeFile(
      config + "/test-mimeapps.list", "[Added Associations]\nx-scheme-handler/reader=a.desktop;\n")
    #expect(try directories.handler(forScheme: "reader").desktopID == "a.desktop")
  }

  @Test func noHandlerNamesTheSchemeTheDirectoriesAndUnreadableEntries() throws {
    install("good.desktop", in: home, "MimeType=text/plain;\n")
    makeDirectories(system + "/applications")
    writeFile(system + "/applications/broken.desktop", "Name=before any group\n")
    #expect {
      try directories.handler(forScheme: "nosuchscheme")
    } throws: { error in
      guard let error = error as? ActivationError else { return false }
      return error.code == .noHandler
        && error.message.contains("No installed application handles nosuchscheme: URLs")
        && error.message.contains("MimeType=x-scheme-handler/nosuchscheme")
        && error.message.contains(home + "/applications")
        && error.message.contains("broken.desktop line 1 has the key Name before any group")
    }
  }

  @Test func theInstalledEntryPassesDesktopFileValidate() async throws {
    let result = try await Products.runCommandAsync(
      "desktop-file-validate",
      [Repository.path("Protocol/applications/org.notifybus.ReadLater.desktop")])
    #expect(result.status == 0, "\(result)")
    let entry = try DesktopEntry(
      parsing: readBytes(Repository.path("Protocol/applications/org.notifybus.ReadLater.desktop"))
        ?? [])
    #expect(entry.isDBusActivatable)
    #expect(entry.mimeTypes == ["x-scheme-handler/readlater"])
  }
}
