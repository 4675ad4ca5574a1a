import PropertyLists

/// The shared-defaults file: a binary property list (`bplist00`) whose root is a
/// dictionary with string keys.
package enum DefaultsFile {
  /// Encodes a defaults dictionary.
  package static func encode(_ values: [String: PropertyListValue]) throws(PropertyListError)
    -> [UInt8]
  {
    try BinaryPropertyList.encode(.dictionary(values))
  }

  /// Decodes a defaults file, refusing anything but a binary property list whose root is a
  /// dictionary.
  package static func decode(_ bytes: [UInt8]) throws(SpoolEntryFormat.Failure) -> [String:
    PropertyListValue]
  {
    let root: PropertyListValue
    do {
      root = try BinaryPropertyList.decode(bytes)
    } catch {
      throw .init(error.message)
    }
    guard case .dictionary(let values) = root else { throw .init("its root is not a dictionary") }
    return values
  }
}
