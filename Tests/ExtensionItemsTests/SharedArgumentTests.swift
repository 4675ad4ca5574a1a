import ExtensionItems
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

struct SharedArgumentTests {
  private let temporary = TemporaryDirectory("shared-argument")

  func parse(_ text: String) throws(SharedArgumentError) -> SharedArgument {
    try SharedArgument(parsing: text, currentDirectory: "/home/user")
  }

  @Test func pathsFileURLsAndWebURLs() throws {
    #expect(try parse("/tmp/a b.png") == .file(path: "/tmp/a b.png"))
    #expect(try parse("photo.png") == .file(path: "/home/user/photo.png"))
    #expect(try parse("./a:b") == .file(path: "/home/user/./a:b"))
    #expect(try parse("file:///tmp/a%20b%C3%A9.png") == .file(path: "/tmp/a bé.png"))
    #expect(try parse("file://localhost/tmp/x") == .file(path: "/tmp/x"))
    #expect(try parse("FILE:/tmp/x") == .file(path: "/tmp/x"))
    #expect(
      try parse("https://example.com/a?b=1#c")
        == .webURL(URL(string: "https://example.com/a?b=1#c")!))
    #expect(try parse("HTTP://example.com") == .webURL(URL(string: "HTTP://example.com")!))
  }

  @Test(arguments: [
    ("", SharedArgumentError.Code.empty, "it is empty"),
    ("gopher://example.com/", .unknownScheme, "the scheme 'gopher' is not one"),
    ("readlater://import?count=1", .unknownScheme, "(file, http, https)"),
    (
      "notes:2024.txt", .unknownScheme, "write a file name with a colon as a path: ./notes:2024.txt"
    ),
    ("http://", .malformed, "a web URL needs a host"),
    ("https://exa mple.com/", .malformed, "percent-encode spaces"),
    ("https://example.com/%zz", .malformed, "% that is not followed by two hex digits"),
    ("file://server/share/x", .malformed, "names the host 'server'"),
    ("file:relative", .malformed, "names an absolute path"),
    ("file:///tmp/a?b", .malformed, "no query or fragment"),
    ("file:///tmp/%zz", .malformed, "% that is not followed by two hex digits"),
    ("file:///tmp/%00", .malformed, "NUL byte"),
    ("file:///tmp/%FF", .malformed, "not UTF-8"),
    ("a\u{0}b", .malformed, "'a?b': it contains a NUL byte"),
    ("gopher:\u{1B}[2J", .unknownScheme, "'gopher:?[2J'"),
  ])
  func malformedArgumentsAreRefusedWithTheReason(
    _ text: String, _ code: SharedArgumentError.Code, _ reason: String
  ) {
    let error = #expect(throws: SharedArgumentError.self) { try parse(text) }
    #expect(error?.code == code)
    #expect(error?.description.contains(reason) == true, "\(error?.description ?? "")")
  }

  @Test func filesAreTypedByNameAndContentAndBadFilesAreRefused() throws {
    let png = temporary.path("photo.jpg")
    writeFile(png, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0])
    let provider = try SharedArgument.file(path: png).provider()
    #expect(provider.registeredTypes == [.png])
    #expect(provider.suggestedName == "photo.jpg")
    #expect(provider.representations.first?.content == .file(path: png))

    let text = temporary.path("README")
    writeFile(text, "plain words\n")
    #expect(try SharedArgument.file(path: text).provider().registeredTypes == [.utf8PlainText])

    let missing = #expect(throws: SharedArgumentError.self) {
      try SharedArgument.file(path: temporary.path("nope.png")).provider()
    }
    #expect(missing?.code == .missing)
    #expect(missing?.description.hasSuffix("nope.png': no such file") == true)

    let fifo = temporary.path("pipe")
    #expect(mkfifo(fifo, 0o600) == 0)
    let directory = temporary.path("folder")
    #expect(mkdir(directory, 0o700) == 0)
    for (path, what) in [(fifo, "a FIFO (named pipe)"), (directory, "a directory")] {
      let error = #expect(throws: SharedArgumentError.self) {
        try SharedArgument.file(path: path).provider()
      }
      #expect(error?.code == .notARegularFile)
      #expect(error?.description.contains("it is \(what), not a regular file") == true)
    }
    #expect(
      try SharedArgument(parsing: "https://example.com/", currentDirectory: "/").provider()
        .registeredTypes == [.url])
  }
}
