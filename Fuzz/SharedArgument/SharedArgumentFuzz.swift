// libFuzzer harness for the share extension's argument typing and content sniffing.
//
// Any text must either be refused with a SharedArgumentError or read as a web URL with an
// http(s) scheme and a host, or an absolute path without NUL bytes. Any bytes, as a file's
// first bytes under a few names, must give a type without trapping, and the same type when
// offered again.

import ExtensionItems
import Foundation

public func fuzz(_ bytes: [UInt8]) {
  let text = String(decoding: bytes, as: UTF8.self)
  if let argument = try? SharedArgument(parsing: text, currentDirectory: "/work") {
    switch argument {
    case .webURL(let url):
      let scheme = url.scheme?.lowercased()
      precondition(scheme == "http" || scheme == "https", "a web URL with scheme \(scheme ?? "-")")
      precondition(!(url.host ?? "").isEmpty, "a web URL without a host")
    case .file(let path):
      precondition(path.hasPrefix("/"), "a relative path: \(path)")
      precondition(!path.utf8.contains(0), "a path with a NUL byte")
    }
  }
  for name in ["photo.png", "notes.txt", "noextension", "clip.mp4", "doc.svg"] {
    let type = ContentSniffer.type(forFileName: name[...], prefix: bytes, isWholeFile: true)
    let again = ContentSniffer.type(forFileName: name[...], prefix: bytes, isWholeFile: true)
    precondition(type == again, "sniffing is not deterministic")
    _ = ContentSniffer.evidence(ofPrefix: bytes, isWholeFile: false)
  }
}
