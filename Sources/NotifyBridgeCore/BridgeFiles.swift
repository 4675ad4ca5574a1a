import SystemSupport

/// Reading the small files a bridge configuration names.
public enum BridgeFiles {
  /// The largest file read: configuration files and password files are small.
  public static let maximumSize = 1 << 20

  /// Reads a whole regular file of at most ``maximumSize`` bytes; the error names the path.
  public static func read(_ path: String) -> Result<[UInt8], BridgeError> {
    do {
      return .success(
        try FileDescriptor<FileSystemError>.readRegularFile(path, limit: maximumSize))
    } catch {
      return .failure(BridgeError(.configuration, error.description))
    }
  }
}
