import CDBus

extension DBusError {
  /// Converts a libdbus error, keeping its name and prefixing its message with `context`.
  init(_ error: CDBus.DBusError, _ context: String) {
    let name = error.name.map { String(cString: $0) } ?? Name.failed.rawValue
    let message = error.message.map { String(cString: $0) } ?? "unknown error"
    self.init(Name(rawValue: name), "\(context): \(message)")
  }
}
