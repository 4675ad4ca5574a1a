import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Whole-file reads without Foundation.
enum FileBytes {
  /// The file's bytes, or the error; `EFBIG` past `limit` bytes.
  static func read(_ path: String, limit: Int) -> Result<[UInt8], Errno> {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return .failure(.current) }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if count < 0 && errno == EINTR { continue }
      if count < 0 { return .failure(.current) }
      if count == 0 { return .success(bytes) }
      bytes += buffer[0..<count]
      if bytes.count > limit { return .failure(Errno(rawValue: EFBIG)) }
    }
  }
}
