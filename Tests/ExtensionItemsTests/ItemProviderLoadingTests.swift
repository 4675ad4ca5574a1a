import ExtensionItems
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

struct ItemProviderLoadingTests {
  private func makeDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
      "ExtensionItemsTests-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }

  @Test func coercionTableCoversEveryPair() {
    for stored in ItemRepresentation.Kind.allCases {
      for requested in ItemRepresentation.Kind.allCases {
        let coercion = ItemCoercion.from(stored, to: requested)
        #expect((coercion == .identity) == (stored == requested))
      }
    }
    #expect(ItemCoercion.from(.url, to: .data) == .followFileURL)
    #expect(ItemCoercion.from(.text, to: .url) == .parseURL)
  }

  @Test func textLoadsAsDataURLAndFile() throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    var provider = ItemProvider(text: " https://swift.org/blog \n")
    provider.suggestedName = "link.txt"
    #expect(try provider.loadData(for: .plainText) == Data(" https://swift.org/blog \n".utf8))
    #expect(try provider.loadURL(for: .text).absoluteString == "https://swift.org/blog")
    let file = try provider.loadFile(for: .text, temporaryDirectory: directory)
    #expect(file.lastPathComponent == "link.txt")
    #expect(try String(contentsOf: file, encoding: .utf8) == " https://swift.org/blog \n")
  }

  /// A FIFO behind a file reference is refused, not read without end; a loaded file is
  /// 0600 in a new 0700 directory.
  @Test func aFIFOIsRefusedAndLoadedFilesArePrivate() throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let fifo = directory.appendingPathComponent("pipe.txt").path
    #expect(mkfifo(fifo, 0o600) == 0)
    let error = #expect(throws: ItemProviderError.self) {
      _ = try ItemProvider(fileAtPath: fifo).loadData(for: .plainText)
    }
    #expect("\(String(describing: error))".contains("it is a FIFO (named pipe)"))
    let file = try ItemProvider(text: "x").loadFile(for: .text, temporaryDirectory: directory)
    let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
    #expect(attributes[.posixPermissions] as? Int == 0o600)
    let parent = try FileManager.default.attributesOfItem(
      atPath: file.deletingLastPathComponent().path)
    #expect(parent[.posixPermissions] as? Int == 0o700)
  }

  @Test func fileReferencesResolveAgainstTheBaseDirectory() throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    try Data("héllo".utf8).write(to: directory.appendingPathComponent("note.txt"))
    let provider = ItemProvider(fileAtPath: "note.txt")
    #expect(try provider.loadText(for: .plainText, baseDirectory: directory) == "héllo")
    #expect(try provider.loadData(for: .data, baseDirectory: directory) == Data("héllo".utf8))
    let url = try provider.loadURL(for: .item, baseDirectory: directory)
    #expect(url.path == directory.appendingPathComponent("note.txt").path)
    #expect(try provider.loadFile(for: .text, baseDirectory: directory).path == url.path)
  }

  @Test func errorsCarryApplesCodes() throws {
    let provider = ItemProvider(data: Data([0xFF, 0xFE]), type: .plainText)
    #expect(throws: ItemProviderError.self) { try provider.loadData(for: .image) }
    do {
      _ = try provider.loadData(for: .image)
    } catch {
      #expect(error.code == .itemUnavailable)
      #expect(error.code.rawValue == -1000)
      #expect(error.message.contains("public.plain-text"))
    }
    do {
      _ = try provider.loadText(for: .text)
      Issue.record("invalid UTF-8 loaded as text")
    } catch {
      #expect(error.code.rawValue == -1100)
    }
    let web = ItemProvider(url: URL(string: "https://example.com")!)
    do {
      _ = try web.loadFile(for: .url)
      Issue.record("a web URL loaded as a file")
    } catch {
      #expect(error.code.rawValue == -1200)
    }
    #expect(try web.loadData(for: .url) == Data("https://example.com".utf8))
    #expect(try web.loadText(for: .url) == "https://example.com")
    let missing = ItemProvider(fileAtPath: "/nonexistent/\(UUID().uuidString).png")
    do {
      _ = try missing.loadData(for: .image)
      Issue.record("a missing file loaded")
    } catch {
      #expect(error.code == .itemUnavailable)
    }
    let notURL = ItemProvider(text: "not a url")
    do {
      _ = try notURL.loadURL(for: .text)
      Issue.record("plain words parsed as a URL")
    } catch {
      #expect(error.code == .unexpectedValueClass)
    }
  }

  @Test func fileURLsAreFollowed() throws {
    let directory = try makeDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let file = directory.appendingPathComponent("a.bin")
    try Data([9, 8, 7]).write(to: file)
    let provider = ItemProvider(url: file)
    #expect(try provider.loadData(for: .fileURL) == Data([9, 8, 7]))
    #expect(try provider.loadFile(for: .url) == file)
  }
}
