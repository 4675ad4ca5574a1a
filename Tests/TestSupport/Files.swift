#if canImport(Glibc)
  package import Glibc
#elseif canImport(Musl)
  package import Musl
#endif

/// The checkout the tests were built from, for documents and fixtures kept in it.
package enum Repository {
  /// The repository's root directory.
  package static let root: String = {
    // This file is <root>/Tests/TestSupport/Files.swift.
    var components = #filePath.split(separator: "/", omittingEmptySubsequences: false)
    components.removeLast(3)
    return components.joined(separator: "/")
  }()

  /// The path of `relativePath` inside the repository.
  package static func path(_ relativePath: String) -> String { root + "/" + relativePath }
}

/// Writes `text` to `path`, replacing what was there.
package func writeFile(_ path: String, _ text: String, mode: mode_t = 0o600) {
  writeFile(path, Array(text.utf8), mode: mode)
}

/// Writes `bytes` to `path`, replacing what was there.
package func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) {
  let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
  precondition(fd >= 0, "cannot create \(path)")
  defer { close(fd) }
  var written = 0
  while written < bytes.count {
    let count = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    precondition(count > 0 || errno == EINTR, "cannot write \(path)")
    written += max(count, 0)
  }
}

/// The bytes of the file at `path`, or `nil` when it cannot be read.
package func readBytes(_ path: String) -> [UInt8]? {
  let fd = open(path, O_RDONLY | O_CLOEXEC)
  guard fd >= 0 else { return nil }
  defer { close(fd) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 65536)
  while true {
    let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
    if count == 0 { return bytes }
    if count < 0 {
      if errno == EINTR { continue }
      return nil
    }
    bytes += chunk[..<count]
  }
}

/// The text of the file at `path`, or `nil` when it cannot be read.
package func readFile(_ path: String) -> String? {
  readBytes(path).map { String(decoding: $0, as: UTF8.self) }
}
