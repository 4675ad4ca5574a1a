import Foundation

/// The shared-defaults file: a binary property list (`bplist00`) whose root is a
/// dictionary with string keys.
enum DefaultsFile {
  /// Encodes a defaults dictionary.
  static func encode(_ values: [String: PropertyListValue]) throws(ContainerError) -> [UInt8] {
    do {
      let data = try PropertyListSerialization.data(
        fromPropertyList: values.mapValues(\.foundationObject), format: .binary, options: 0)
      return Array(data)
    } catch {
      throw ContainerError(
        code: .unsupportedValue, path: "",
        message: "The defaults could not be encoded as a binary property list: \(error).")
    }
  }

  /// Decodes a defaults file, refusing anything but a binary property list whose root is a
  /// dictionary of property-list values with string keys.
  static func decode(_ bytes: [UInt8]) throws(SpoolEntryFormat.Failure) -> [String:
    PropertyListValue]
  {
    guard bytes.count >= 8 + 32, bytes[0..<8].elementsEqual("bplist00".utf8) else {
      throw .init("it is not a binary property list (no 'bplist00' header and trailer)")
    }
    var format = PropertyListSerialization.PropertyListFormat.binary
    let object: Any
    do {
      object = try PropertyListSerialization.propertyList(
        from: Data(bytes), options: [], format: &format)
    } catch {
      throw .init("the binary property list does not parse")
    }
    guard format == .binary else { throw .init("it is not a binary property list") }
    guard case .dictionary(let values)? = PropertyListValue(foundationObject: object) else {
      throw .init("its root is not a dictionary of property-list values with string keys")
    }
    return values
  }
}
