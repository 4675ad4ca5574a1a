public import NotifyServerFiles
import SystemSupport

extension AccessPolicy {
  /// Reads and parses an access configuration file (`notifyd --config`).
  ///
  /// - Parameter path: The file's path, named in every error.
  /// - Throws: ``NotifydError`` with code ``NotifydError/Code/configuration`` when the file
  ///   cannot be read or is malformed.
  public static func load(contentsOf path: String) throws(NotifydError) -> AccessPolicy {
    let bytes: [UInt8]
    do {
      bytes = try FileDescriptor<FileSystemError>.readRegularFile(
        path, limit: AccessConfiguration.maximumSize)
    } catch {
      throw NotifydError(.configuration, "cannot read the configuration: \(error)")
    }
    do {
      return AccessPolicy(rules: try AccessConfiguration.parse(bytes, path: path))
    } catch {
      throw NotifydError(.configuration, "bad configuration: \(error.message)")
    }
  }
}
