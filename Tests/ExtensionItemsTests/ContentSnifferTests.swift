import ExtensionItems
import Testing

struct ContentSnifferTests {
  func type(_ name: String, _ bytes: [UInt8], whole: Bool = true) -> UniformType {
    ContentSniffer.type(forFileName: name[...], prefix: bytes, isWholeFile: whole)
  }

  static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
  static let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0]

  @Test func signatures() {
    #expect(ContentSniffer.evidence(ofPrefix: Self.png, isWholeFile: true)?.type == .png)
    #expect(ContentSniffer.evidence(ofPrefix: Self.jpeg, isWholeFile: true)?.type == .jpeg)
    let cases: [(String, UniformType)] = [
      ("GIF89a....", "com.compuserve.gif"), ("%PDF-1.7\n", .pdf),
      ("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ", "org.webmproject.webp"),
      ("\u{0}\u{0}\u{0}\u{18}ftypmp42", .mpeg4Movie), ("\u{0}\u{0}\u{0}\u{18}ftypheic", .heic),
      ("\u{0}\u{0}\u{0}\u{14}ftypqt  ", "com.apple.quicktime-movie"),
    ]
    for (text, expected) in cases {
      #expect(
        ContentSniffer.evidence(ofPrefix: Array(text.utf8), isWholeFile: true)?.type == expected)
    }
    #expect(
      ContentSniffer.evidence(ofPrefix: [0x50, 0x4B, 3, 4], isWholeFile: true)?.kind == .container)
  }

  @Test func textAndNotText() {
    #expect(
      ContentSniffer.evidence(ofPrefix: Array("héllo\n\tok\r\n".utf8), isWholeFile: true)?.type
        == .utf8PlainText)
    #expect(
      ContentSniffer.evidence(ofPrefix: [0xFF, 0xFE, 0x41, 0], isWholeFile: true)?.type
        == .utf16PlainText)
    #expect(ContentSniffer.evidence(ofPrefix: [0x41, 0x00, 0x42], isWholeFile: true) == nil)
    #expect(ContentSniffer.evidence(ofPrefix: [0x41, 0x01], isWholeFile: true) == nil)
    #expect(ContentSniffer.evidence(ofPrefix: [], isWholeFile: true) == nil)
    // A character cut by the end of the prefix is text; at the end of the file it is not.
    let cut = Array("abc€".utf8).dropLast()
    #expect(ContentSniffer.evidence(ofPrefix: cut, isWholeFile: false)?.type == .utf8PlainText)
    #expect(ContentSniffer.evidence(ofPrefix: cut, isWholeFile: true) == nil)
    #expect(ContentSniffer.evidence(ofPrefix: [0xC3, 0x28], isWholeFile: false) == nil)
  }

  @Test func theNameDecidesUnlessTheContentShowsItMissingOrWrong() {
    #expect(type("photo.png", Self.png) == .png)
    #expect(type("photo.jpg", Self.png) == .png)  // wrong extension
    #expect(type("photo", Self.png) == .png)  // no extension
    #expect(type("photo.weird", Self.jpeg) == .jpeg)  // unknown extension
    #expect(type("notes.txt", Self.png) == .png)
    #expect(type("image.png", Array("just text".utf8)) == .utf8PlainText)
    #expect(type("data.json", Array("{}".utf8)) == .json)  // text confirms the name
    #expect(type("page.html", Array("<p>".utf8)) == "public.html")
    #expect(type("song.m4a", Array("\u{0}\u{0}\u{0}\u{18}ftypM4A ".utf8)) == "public.mpeg-4-audio")
    #expect(type("archive.zip", [0x50, 0x4B, 3, 4]) == .zip)
    #expect(type("report.plist", [0x50, 0x4B, 3, 4]) == .propertyList)  // a container: the name
    #expect(type("truncated.png", [0x89, 0x50]) == .png)  // no evidence: the name
    #expect(type("blob", [0, 1, 2, 3]) == .data)
    #expect(type("empty.png", []) == .png)
    #expect(type("noext", Array("words".utf8)) == .utf8PlainText)
  }
}
