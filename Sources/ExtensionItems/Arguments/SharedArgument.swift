public import Foundation
import SystemSupport

/// One thing a launcher hands a share extension on its command line, as a file manager's
/// "Open With" does through a desktop entry's `%U`: a `file:` URL, a path, or a web URL.
///
/// ``init(parsing:currentDirectory:)`` reads the text without touching the file system;
/// ``provider(registry:)`` then checks the file and types it. The rules are in
/// `Protocol/desktop-entries.md` §3.
public enum SharedArgument: Hashable, Sendable {
  /// An `http` or `https` URL.
  case webURL(URL)
  /// A file, by absolute path (from a path or a `file:` URL).
  case file(path: String)

  /// Reads one argument.
  ///
  /// - A text that starts with a URL scheme (`letter *( letter / digit / + / - / . ) :`) is a
  ///   URL: `http` and `https` URLs must have a host and be written as RFC 3986 allows
  ///   (spaces and non-ASCII percent-encoded); `file` URLs must name a local absolute path
  ///   (no host but `localhost`, no query or fragment) and are percent-decoded; any other
  ///   scheme is refused. A file name with a colon is written as a path (`./a:b`).
  /// - Anything else is a path, resolved against `currentDirectory` when relative.
  ///
  /// - Throws: ``SharedArgumentError`` naming the argument and what is wrong with it.
  public init(parsing text: String, currentDirectory: String) throws(SharedArgumentError) {
    guard !text.isEmpty else { throw SharedArgumentError(.empty, text, "it is empty") }
    guard !text.utf8.contains(0) else {
      throw SharedArgumentError(.malformed, text, "it contains a NUL byte")
    }
    guard let scheme = Self.scheme(of: text) else {
      let path = text.hasPrefix("/") ? text : Self.joined(currentDirectory, text)
      self = .file(path: path)
      return
    }
    switch scheme.lowercased() {
    case "http", "https":
      if let problem = ItemRepresentation.urlPayloadProblem(text) {
        throw SharedArgumentError(.malformed, text, Self.reason(problem))
      }
      guard let url = URL(string: text), let host = url.host, !host.isEmpty else {
        throw SharedArgumentError(.malformed, text, "a web URL needs a host")
      }
      self = .webURL(url)
    case "file":
      self = .file(path: try Self.filePath(text))
    default:
      let looksLikeName = !text[text.index(after: scheme.endIndex)...].hasPrefix("//")
      throw SharedArgumentError(
        .unknownScheme, text,
        "the scheme '\(scheme)' is not one the extension takes (file, http, https)"
          + (looksLikeName ? "; write a file name with a colon as a path: ./\(text)" : ""))
    }
  }

  /// The scheme a text starts with, if it starts with one followed by a colon.
  private static func scheme(of text: String) -> Substring? {
    guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return nil }
    let scheme = text[..<colon]
    guard let first = scheme.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic
    else { return nil }
    let allowed = scheme.unicodeScalars.allSatisfy {
      $0.isASCII
        && ($0.properties.isAlphabetic || ("0"..."9").contains($0)
          || "+-.".contains(
            Character($0)))
    }
    return allowed ? scheme : nil
  }

  private static func reason(_ problem: ItemRepresentation.URLPayloadError) -> String {
    // The payload error quotes the text, which the argument error already does, and speaks
    // of payloads.
    var message = Substring(problem.message)
    if let quoteEnd = message.range(of: "\" ") { message = message[quoteEnd.upperBound...] }
    if let tail = message.range(of: "; a URL payload") { message = message[..<tail.lowerBound] }
    return message + "; percent-encode spaces and non-ASCII characters"
  }

  /// The local path a `file:` URL names, percent-decoded.
  private static func filePath(_ text: String) throws(SharedArgumentError) -> String {
    var rest = Substring(text.drop { $0 != ":" }.dropFirst())
    if rest.contains("?") || rest.contains("#") {
      throw SharedArgumentError(
        .malformed, text, "a file URL has no query or fragment (write ? as %3F and # as %23)")
    }
    if rest.hasPrefix("//") {
      rest = rest.dropFirst(2)
      let slash = rest.firstIndex(of: "/") ?? rest.endIndex
      let host = rest[..<slash]
      guard host.isEmpty || host.lowercased() == "localhost" else {
        throw SharedArgumentError(
          .malformed, text, "the file URL names the host '\(host)'; only local files can be shared")
      }
      rest = rest[slash...]
    }
    guard rest.hasPrefix("/") else {
      throw SharedArgumentError(.malformed, text, "a file URL names an absolute path")
    }
    guard let bytes = percentDecoded(rest) else {
      throw SharedArgumentError(
        .malformed, text, "it has a % that is not followed by two hex digits")
    }
    guard !bytes.contains(0) else {
      throw SharedArgumentError(.malformed, text, "its path contains a NUL byte (%00)")
    }
    guard let path = String(validating: bytes, as: UTF8.self) else {
      throw SharedArgumentError(.malformed, text, "its path is not UTF-8 once decoded")
    }
    return path
  }

  private static func percentDecoded(_ text: Substring) -> [UInt8]? {
    let utf8 = Array(text.utf8)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(utf8.count)
    var index = 0
    while index < utf8.count {
      guard utf8[index] == UInt8(ascii: "%") else {
        bytes.append(utf8[index])
        index += 1
        continue
      }
      guard index + 2 < utf8.count, let high = hexValue(utf8[index + 1]),
        let low = hexValue(utf8[index + 2])
      else { return nil }
      bytes.append(high << 4 | low)
      index += 3
    }
    return bytes
  }

  private static func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
  }

  private static func joined(_ directory: String, _ path: String) -> String {
    directory.hasSuffix("/") ? directory + path : directory + "/" + path
  }

  /// The attachment for this argument: a web URL provider, or a file provider typed by
  /// ``ContentSniffer/type(forFileName:prefix:isWholeFile:registry:)``.
  ///
  /// - Throws: ``SharedArgumentError``: ``SharedArgumentError/Code/missing`` for a file that
  ///   does not exist, ``SharedArgumentError/Code/notARegularFile`` for a directory, a FIFO, a
  ///   device or a socket (refused before anything is read, so a FIFO never blocks), and
  ///   ``SharedArgumentError/Code/unreadable`` for any other failure to read it.
  public func provider(registry: UniformTypeRegistry = .system) throws(SharedArgumentError)
    -> ItemProvider
  {
    switch self {
    case .webURL(let url):
      return ItemProvider(url: url)
    case .file(let path):
      let buffer = UnsafeMutableRawBufferPointer.allocate(
        byteCount: ContentSniffer.prefixLength, alignment: 1)
      defer { buffer.deallocate() }
      var count = 0
      do {
        let file = try FileDescriptor<FileSystemError>.openRegularFile(path)
        while count < buffer.count {
          let read = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[count...]))
          if read == 0 { break }
          count += read
        }
      } catch {
        throw Self.error(error, path: path)
      }
      let prefix = Array(buffer[..<count])
      let name = path.split(separator: "/").last ?? Substring(path)
      let type = ContentSniffer.type(
        forFileName: name, prefix: prefix, isWholeFile: count < buffer.count,
        registry: registry)
      var provider = ItemProvider(
        representations: [ItemRepresentation(type: type, content: .file(path: path))])
      provider.suggestedName = String(name)
      return provider
    }
  }

  private static func error(_ error: FileSystemError, path: String) -> SharedArgumentError {
    switch error.problem {
    case .systemCall(_, let code) where code == .noSuchFileOrDirectory:
      return SharedArgumentError(.missing, path, "no such file")
    case .wrongType(let type, _):
      return SharedArgumentError(.notARegularFile, path, "it is \(type), not a regular file")
    default:
      return SharedArgumentError(.unreadable, path, "\(error)")
    }
  }
}

/// Why a command-line argument cannot be shared.
public struct SharedArgumentError: Error, Hashable, Sendable, CustomStringConvertible {
  /// What kind of problem it is.
  public enum Code: Hashable, Sendable {
    /// The argument is empty.
    case empty
    /// A URL that does not parse, or a `file:` URL that names no local path.
    case malformed
    /// A URL whose scheme is not `file`, `http` or `https`.
    case unknownScheme
    /// The file does not exist.
    case missing
    /// A directory, a FIFO, a device or a socket.
    case notARegularFile
    /// The file exists but cannot be read.
    case unreadable
  }

  /// What kind of problem it is.
  public var code: Code
  /// The argument (or the path it named).
  public var argument: String
  /// What is wrong with it.
  public var reason: String

  /// Creates an error.
  public init(_ code: Code, _ argument: String, _ reason: String) {
    self.code = code
    self.argument = argument
    self.reason = reason
  }

  /// `'ARGUMENT': REASON`, the argument cut at 200 characters, and control characters
  /// shown as `?`, so a file name cannot move a terminal's cursor.
  public var description: String {
    let cut = argument.unicodeScalars.count > 200
    let shown = Self.printable(String(argument.unicodeScalars.prefix(200))) + (cut ? "..." : "")
    return "'\(shown)': \(Self.printable(reason))"
  }

  private static func printable(_ text: String) -> String {
    var result = ""
    for scalar in text.unicodeScalars {
      let isControl = scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
      result.unicodeScalars.append(isControl ? "?" : scalar)
    }
    return result
  }
}
