public import NotifyServerFiles

extension AccessPolicy {
  /// Reads and parses an access configuration file (`notifyd --config`).
  ///
  /// - Parameter path: The file's path, named in every error.
  /// - Throws: ``NotifydError`` with code ``NotifydError/Code/configuration`` when the file
  ///   cannot be read or is malformed.
  public static func load(contentsOf path: String) throws(NotifydError) -> AccessPolicy {
    switch FileBytes.read(path, limit: AccessConfiguration.maximumSize) {
    case .failure(let error):
      throw NotifydError(.configuration, "cannot read the configuration \(path): \(error)")
    case .success(let bytes):
      do {
        return AccessPolicy(rules: try AccessConfiguration.parse(bytes, path: path))
      } catch {
        throw NotifydError(.configuration, "bad configuration: \(error.message)")
      }
    }
  }
}
