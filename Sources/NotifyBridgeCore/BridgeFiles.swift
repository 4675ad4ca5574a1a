#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Reading the small files a bridge configuration names.
public enum BridgeFiles {
  /// The largest file read: configuration files and password files are small.
  public static let maximumSize = 1 << 20

  /// Reads a whole file of at most ``maximumSize`` bytes.
  public static func read(_ path: String) -> Result<[UInt8], BridgeError> {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else {
      return .failure(BridgeError(.configuration, String(cString: strerror(errno))))
    }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
      let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
      if count < 0 {
        if errno == EINTR { continue }
        return .failure(BridgeError(.configuration, String(cString: strerror(errno))))
      }
      if count == 0 { return .success(bytes) }
      bytes += chunk.prefix(count)
      if bytes.count > maximumSize {
        return .failure(
          BridgeError(.configuration, "it is larger than \(maximumSize) bytes"))
      }
    }
  }
}
