import ExtensionItems
import Foundation
import Testing

/// The oracle: extension.md §3.3, "all ancestors" column, restated independently of
/// `Protocol/uniform-types.json`.
private let ancestorOracle: [String: Set<String>] = {
  let leafImage: Set = ["public.image", "public.data", "public.item", "public.content"]
  let text: Set = ["public.text", "public.data", "public.item", "public.content"]
  let movie: Set = [
    "public.movie", "public.audiovisual-content", "public.data", "public.item", "public.content",
  ]
  let plain = text.union(["public.plain-text"])
  return [
    "public.item": [], "public.content": [], "public.archive": [], "public.contact": [],
    "public.composite-content": ["public.content"],
    "public.data": ["public.item"], "public.directory": ["public.item"],
    "public.folder": ["public.directory", "public.item"],
    "com.pkware.zip-archive": ["public.data", "public.item", "public.archive"],
    "public.zip-archive": [
      "com.pkware.zip-archive", "public.data", "public.item", "public.archive",
    ],
    "public.url": ["public.data", "public.item"],
    "public.file-url": ["public.url", "public.data", "public.item"],
    "public.text": ["public.data", "public.item", "public.content"],
    "public.plain-text": text,
    "public.utf8-plain-text": plain, "public.utf16-plain-text": plain,
    "public.rtf": text, "public.html": text, "public.xml": text,
    "public.delimited-values-text": text,
    "public.comma-separated-values-text": text.union(["public.delimited-values-text"]),
    "public.json": text,
    "public.vcard": text.union(["public.contact"]),
    "com.apple.property-list": ["public.data", "public.item"],
    "com.apple.xml-property-list": text.union(["public.xml", "com.apple.property-list"]),
    "com.apple.binary-property-list": [
      "com.apple.property-list", "public.data", "public.item",
    ],
    "com.adobe.pdf": [
      "public.data", "public.item", "public.composite-content", "public.content",
    ],
    "public.image": ["public.data", "public.item", "public.content"],
    "public.jpeg": leafImage, "public.png": leafImage, "public.tiff": leafImage,
    "com.compuserve.gif": leafImage, "org.webmproject.webp": leafImage,
    "public.heif-standard": leafImage,
    "public.heic": leafImage.union(["public.heif-standard"]),
    "public.heif": leafImage.union(["public.heif-standard"]),
    "public.audiovisual-content": ["public.data", "public.item", "public.content"],
    "public.movie": ["public.audiovisual-content", "public.data", "public.item", "public.content"],
    "public.video": movie,
    "public.audio": ["public.audiovisual-content", "public.data", "public.item", "public.content"],
    "public.mpeg-4": movie, "com.apple.quicktime-movie": movie,
    "public.mp3": [
      "public.audio", "public.audiovisual-content", "public.data", "public.item",
      "public.content",
    ],
    "public.mpeg-4-audio": movie.union(["public.mpeg-4", "public.audio"]),
  ]
}()

struct UniformTypeTests {
  @Test(arguments: ancestorOracle.keys.sorted())
  func ancestorsMatchTheOracle(_ identifier: String) throws {
    let registry = UniformTypeRegistry.system
    let type = UniformType(identifier)
    #expect(registry.isDeclared(type))
    let expected = try #require(ancestorOracle[identifier])
    #expect(Set(registry.supertypes(of: type).map(\.identifier)) == expected)
    for candidate in ancestorOracle.keys {
      let conforms = registry.conforms(type, to: UniformType(candidate))
      #expect(conforms == (candidate == identifier || expected.contains(candidate)))
    }
  }

  @Test func everyDeclaredTypeIsInTheOracle() {
    let declared = Set(UniformTypeRegistry.system.declarations.map(\.identifier))
    #expect(declared == Set(ancestorOracle.keys))
  }

  @Test func corrections() {
    #expect(!UniformType.html.conforms(to: .plainText))
    #expect(!UniformType.json.conforms(to: .plainText))
    #expect(!UniformType("public.comma-separated-values-text").conforms(to: .plainText))
    #expect(!UniformType.heic.conforms(to: "public.heif"))
    #expect(!UniformTypeRegistry.system.isDeclared("public.property-list"))
    #expect(UniformType("PUBLIC.JPEG").conforms(to: .image))
  }

  @Test func filenameExtensionLookup() {
    let registry = UniformTypeRegistry.system
    #expect(registry.type(forFilenameExtension: "JPG") == .jpeg)
    #expect(registry.type(forFilenameExtension: ".jpe") == .jpeg)
    #expect(registry.type(forFilenameExtension: "zip") == .zip)
    #expect(registry.type(forFilenameExtension: "plist") == .propertyList)
    #expect(registry.type(forFilenameExtension: "htm") == .html)
    #expect(registry.types(forFilenameExtension: "plist").count == 3)
    #expect(registry.preferredFilenameExtension(for: .jpeg) == "jpeg")
    #expect(registry.preferredFilenameExtension(for: .url) == nil)
    #expect(registry.type(forFilenameExtension: "txt", conformingTo: .image).isDynamic)
  }

  @Test func mimeTypeLookup() {
    let registry = UniformTypeRegistry.system
    #expect(registry.type(forMIMEType: "image/JPEG") == .jpeg)
    #expect(registry.type(forMIMEType: "text/plain; charset=utf-8") == .utf8PlainText)
    #expect(registry.type(forMIMEType: "text/plain;charset=iso-8859-1") == .plainText)
    #expect(registry.type(forMIMEType: "text/x-vcard") == .vCard)
    #expect(registry.type(forMIMEType: "application/xml") == .xml)
    #expect(registry.preferredMIMEType(for: .vCard) == "text/vcard")
    #expect(registry.type(forMIMEType: "image/heic") == .heic)
  }

  /// Apple's `public.mp3` carries `audio/mpeg` and seven aliases; each names the type, and the
  /// preferred MIME type stays `audio/mpeg`.
  @Test(arguments: [
    "audio/mpeg", "audio/mpeg3", "audio/mpg", "audio/mp3", "audio/x-mpeg", "audio/x-mpeg3",
    "audio/x-mpg", "audio/X-MP3",
  ])
  func mp3MIMEAliasesNameTheMP3Type(_ mimeType: String) {
    let registry = UniformTypeRegistry.system
    let type = registry.type(forMIMEType: mimeType)
    #expect(type == UniformType("public.mp3"), "\(mimeType) -> \(type)")
    #expect(!type.isDynamic)
    #expect(registry.conforms(type, to: .audio))
    #expect(registry.preferredMIMEType(for: type) == "audio/mpeg")
  }

  @Test func dynamicTypesForUnknownTags() throws {
    let registry = UniformTypeRegistry.system
    let type = registry.type(forFilenameExtension: "Weird")
    #expect(type.isDynamic)
    #expect(type.identifier == "dyn.ext-7765697264")
    #expect(registry.conforms(type, to: .data))
    #expect(registry.conforms(type, to: .item))
    #expect(!registry.conforms(type, to: .content))
    #expect(registry.preferredFilenameExtension(for: type) == "weird")
    let mime = registry.type(forMIMEType: "application/x-thing")
    #expect(registry.preferredMIMEType(for: mime) == "application/x-thing")
    #expect(mime != type)
    #expect(registry.declaration(for: "dyn.ext-zz") == nil)
    #expect(!registry.conforms("org.unknown.type", to: .item))
    #expect(registry.conforms("org.unknown.type", to: "ORG.unknown.TYPE"))
  }

  @Test func customDeclarations() {
    let registry = UniformTypeRegistry.system.declaring(
      exported: [
        UniformTypeDeclaration(
          identifier: "com.example.recipe", conformsTo: ["public.json"],
          filenameExtensions: ["recipe"], mimeTypes: ["application/x-recipe"]),
        UniformTypeDeclaration(identifier: "public.jpeg", conformsTo: ["public.text"]),
      ],
      imported: [
        UniformTypeDeclaration(identifier: "com.example.recipe", conformsTo: ["public.image"]),
        UniformTypeDeclaration(
          identifier: "com.other.sketch", conformsTo: ["public.image"],
          filenameExtensions: ["sketch"]),
      ])
    let recipe = UniformType("com.example.recipe")
    #expect(registry.conforms(recipe, to: .text))
    #expect(!registry.conforms(recipe, to: .image), "exported wins over imported")
    #expect(!registry.conforms(.jpeg, to: .text), "system types cannot be redeclared")
    #expect(registry.type(forFilenameExtension: "recipe") == recipe)
    #expect(registry.type(forMIMEType: "application/x-recipe") == recipe)
    #expect(registry.type(forFilenameExtension: "sketch") == "com.other.sketch")
    #expect(!UniformTypeRegistry.system.isDeclared(recipe))
  }

  @Test func cyclicCustomDeclarationsTerminate() {
    let registry = UniformTypeRegistry(declarations: [
      UniformTypeDeclaration(identifier: "a", conformsTo: ["b"]),
      UniformTypeDeclaration(identifier: "b", conformsTo: ["a", "c"]),
    ])
    #expect(registry.conforms("a", to: "c"))
    #expect(registry.supertypes(of: "a") == ["b", "c"])
  }
}
