public import Foundation

extension SharedDefaults {
  // MARK: - Setting

  /// Sets the value of a key, or removes it when `value` is `nil`.
  ///
  /// - Parameters:
  ///   - value: The value.
  ///   - key: The key.
  /// - Throws: ``ContainerError``: ``ContainerError/Code/valueTooLarge`` above the limit,
  ///   ``ContainerError/Code/corruptFile`` when the file is corrupt, or an I/O error.
  public func set(_ value: PropertyListValue?, forKey key: String) throws(ContainerError) {
    if let value { try checkSize(value, forKey: key) }
    try update { (values) throws(ContainerError) in values[key] = value }
  }

  /// Sets a string value.
  ///
  /// - Parameters:
  ///   - value: The string.
  ///   - key: The key.
  /// - Throws: ``ContainerError`` as ``set(_:forKey:)-(PropertyListValue?,_)`` does.
  public func set(_ value: String, forKey key: String) throws(ContainerError) {
    try set(.string(value), forKey: key)
  }

  /// Sets an integer value.
  ///
  /// - Parameters:
  ///   - value: The integer.
  ///   - key: The key.
  /// - Throws: ``ContainerError`` when the file cannot be written.
  public func set(_ value: Int, forKey key: String) throws(ContainerError) {
    try set(.integer(Int64(value)), forKey: key)
  }

  /// Sets a floating-point value.
  ///
  /// - Parameters:
  ///   - value: The number.
  ///   - key: The key.
  /// - Throws: ``ContainerError`` when the file cannot be written.
  public func set(_ value: Double, forKey key: String) throws(ContainerError) {
    try set(.double(value), forKey: key)
  }

  /// Sets a Boolean value.
  ///
  /// - Parameters:
  ///   - value: The Boolean.
  ///   - key: The key.
  /// - Throws: ``ContainerError`` when the file cannot be written.
  public func set(_ value: Bool, forKey key: String) throws(ContainerError) {
    try set(.bool(value), forKey: key)
  }

  /// Sets a data value.
  ///
  /// - Parameters:
  ///   - value: The bytes; fewer than 4 MiB.
  ///   - key: The key.
  /// - Throws: ``ContainerError`` when the value is too large or the file cannot be written.
  public func set(_ value: Data, forKey key: String) throws(ContainerError) {
    try set(.data(value), forKey: key)
  }

  /// Sets a date value.
  ///
  /// - Parameters:
  ///   - value: The date.
  ///   - key: The key.
  /// - Throws: ``ContainerError`` when the file cannot be written.
  public func set(_ value: Date, forKey key: String) throws(ContainerError) {
    try set(.date(value), forKey: key)
  }

  /// Sets a URL value, stored as its absolute string (file URLs as their path-based URL).
  ///
  /// - Parameters:
  ///   - value: The URL.
  ///   - key: The key.
  /// - Throws: ``ContainerError`` when the file cannot be written.
  public func set(_ value: URL, forKey key: String) throws(ContainerError) {
    try set(.string(value.absoluteString), forKey: key)
  }

  /// Sets an array value.
  ///
  /// - Parameters:
  ///   - value: The elements.
  ///   - key: The key.
  /// - Throws: ``ContainerError`` when the value is too large or the file cannot be written.
  public func set(_ value: [PropertyListValue], forKey key: String) throws(ContainerError) {
    try set(.array(value), forKey: key)
  }

  /// Sets a dictionary value.
  ///
  /// - Parameters:
  ///   - value: The dictionary.
  ///   - key: The key.
  /// - Throws: ``ContainerError`` when the value is too large or the file cannot be written.
  public func set(_ value: [String: PropertyListValue], forKey key: String)
    throws(ContainerError)
  {
    try set(.dictionary(value), forKey: key)
  }

  /// Sets several keys in one atomic write.
  ///
  /// - Parameter values: The values; a `nil` removes its key.
  /// - Throws: ``ContainerError`` when a value is too large or the file cannot be written.
  public func set(_ values: [String: PropertyListValue?]) throws(ContainerError) {
    for case (let key, let value?) in values { try checkSize(value, forKey: key) }
    try update { (stored) throws(ContainerError) in
      for (key, value) in values { stored[key] = value }
    }
  }

  /// Removes the value of a key.
  ///
  /// - Parameter key: The key.
  /// - Throws: ``ContainerError`` when the file cannot be written.
  public func removeObject(forKey key: String) throws(ContainerError) {
    try set(nil as PropertyListValue?, forKey: key)
  }

  // MARK: - Getting

  /// The value of a key: the persisted one, else the registered one.
  ///
  /// - Parameter key: The key.
  /// - Throws: ``ContainerError`` when the file is corrupt or unreadable.
  public func object(forKey key: String) throws(ContainerError) -> PropertyListValue? {
    try effectiveValues()[key]
  }

  /// The string value of a key; numbers are converted, as `UserDefaults` does.
  ///
  /// - Parameter key: The key.
  /// - Throws: ``ContainerError`` when the file is corrupt or unreadable.
  public func string(forKey key: String) throws(ContainerError) -> String? {
    switch try object(forKey: key) {
    case .string(let value): return value
    case .integer(let value): return String(value)
    case .double(let value): return String(value)
    default: return nil
    }
  }

  /// The integer value of a key, or 0; numeric strings, doubles and Booleans convert.
  ///
  /// - Parameter key: The key.
  /// - Throws: ``ContainerError`` when the file is corrupt or unreadable.
  public func integer(forKey key: String) throws(ContainerError) -> Int {
    switch try object(forKey: key) {
    case .integer(let value): return Int(value)
    case .double(let value):
      return value.isFinite ? Int(exactly: value.rounded(.towardZero)) ?? 0 : 0
    case .bool(let value): return value ? 1 : 0
    case .string(let value):
      return Int(value) ?? Double(value).flatMap { Int(exactly: $0.rounded(.towardZero)) } ?? 0
    default: return 0
    }
  }

  /// The floating-point value of a key, or 0; numeric strings, integers and Booleans
  /// convert.
  ///
  /// - Parameter key: The key.
  /// - Throws: ``ContainerError`` when the file is corrupt or unreadable.
  public func double(forKey key: String) throws(ContainerError) -> Double {
    switch try object(forKey: key) {
    case .double(let value): return value
    case .integer(let value): return Double(value)
    case .bool(let value): return value ? 1 : 0
    case .string(let value): return Double(value) ?? 0
    default: return 0
    }
  }

  /// The Boolean value of a key, or `false`; non-zero numbers and the strings `YES`, `yes`,
  /// `true` and `1` are `true`.
  ///
  /// - Parameter key: The key.
  /// - Throws: ``ContainerError`` when the file is corrupt or unreadable.
  public func bool(forKey key: String) throws(ContainerError) -> Bool {
    switch try object(forKey: key) {
    case .bool(let value): return value
    case .integer(let value): return value != 0
    case .double(let value): return value != 0
    case .string(let value): return ["YES", "yes", "true", "TRUE", "1"].contains(value)
    default: return false
    }
  }

  /// The data value of a key.
  ///
  /// - Parameter key: The key.
  /// - Throws: ``ContainerError`` when the file is corrupt or unreadable.
  public func data(forKey key: String) throws(ContainerError) -> Data? {
    if case .data(let value)? = try object(forKey: key) { return value }
    return nil
  }

  /// The date value of a key.
  ///
  /// - Parameter key: The key.
  /// - Throws: ``ContainerError`` when the file is corrupt or unreadable.
  public func date(forKey key: String) throws(ContainerError) -> Date? {
    if case .date(let value)? = try object(forKey: key) { return value }
    return nil
  }

  /// The URL value of a key: a stored URL string, or a path (made a file URL).
  ///
  /// - Parameter key: The key.
  /// - Throws: ``ContainerError`` when the file is corrupt or unreadable.
  public func url(forKey key: String) throws(ContainerError) -> URL? {
    guard case .string(let value)? = try object(forKey: key) else { return nil }
    if value.hasPrefix("/") { return URL(fileURLWithPath: value) }
    return URL(string: value)
  }

  /// The array value of a key.
  ///
  /// - Parameter key: The key.
  /// - Throws: ``ContainerError`` when the file is corrupt or unreadable.
  public func array(forKey key: String) throws(ContainerError) -> [PropertyListValue]? {
    if case .array(let value)? = try object(forKey: key) { return value }
    return nil
  }

  /// The array value of a key when every element is a string.
  ///
  /// - Parameter key: The key.
  /// - Throws: ``ContainerError`` when the file is corrupt or unreadable.
  public func stringArray(forKey key: String) throws(ContainerError) -> [String]? {
    guard let values = try array(forKey: key) else { return nil }
    var strings: [String] = []
    for value in values {
      guard case .string(let string) = value else { return nil }
      strings.append(string)
    }
    return strings
  }

  /// The dictionary value of a key.
  ///
  /// - Parameter key: The key.
  /// - Throws: ``ContainerError`` when the file is corrupt or unreadable.
  public func dictionary(forKey key: String) throws(ContainerError) -> [String: PropertyListValue]?
  {
    if case .dictionary(let value)? = try object(forKey: key) { return value }
    return nil
  }

  /// Every key and value: the persisted ones over the registered ones.
  ///
  /// - Throws: ``ContainerError`` when the file is corrupt or unreadable.
  public func dictionaryRepresentation() throws(ContainerError) -> [String: PropertyListValue] {
    try effectiveValues()
  }
}
