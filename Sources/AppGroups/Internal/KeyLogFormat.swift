/// The append-only key log behind ``SeenKeys`` and a spool's delivered-id record.
///
/// ```
/// header   magic "NBKL" (4 bytes), version u16 = 1, reserved u16 = 0
/// record   u32 key length L (1...65536), L bytes of UTF-8 key, u32 CRC-32 of the
///          preceding 4 + L bytes
/// ```
/// All integers are little-endian. A record that is cut short or fails its checksum ends
/// the log: it is the remains of an interrupted append, and is cut off by the next writer.
package enum KeyLogFormat {
  static let magic: [UInt8] = Array("NBKL".utf8)
  static let version: UInt16 = 1
  package static let headerSize = 8
  static let maximumKeyLength = 65_536

  /// The result of parsing a log.
  package struct Parsed: Sendable {
    /// The keys of the valid records, in file order.
    package var keys: [String]
    /// The offset just past the last valid record.
    package var validLength: Int
  }

  package static func header() -> [UInt8] {
    var writer = ByteWriter()
    writer.append(contentsOf: magic)
    writer.append(version)
    writer.append(UInt16(0))
    return writer.bytes
  }

  package static func record(_ key: String) -> [UInt8] {
    var writer = ByteWriter()
    writer.append(UInt32(key.utf8.count))
    writer.append(contentsOf: key.utf8)
    writer.append(CRC32.checksum(writer.bytes))
    return writer.bytes
  }

  /// Checks the header of a whole log.
  package static func checkHeader(_ bytes: [UInt8]) throws(SpoolEntryFormat.Failure) {
    guard bytes.count >= headerSize, bytes[0..<4].elementsEqual(magic) else {
      throw .init("the key log does not start with the magic 'NBKL'")
    }
    var reader = ByteReader(bytes, at: 4)
    let version = reader.read(UInt16.self)!
    guard version == Self.version else {
      throw .init("key log version \(version) is not supported (expected \(Self.version))")
    }
  }

  /// Parses records starting at `offset` (just past the header, or where a previous parse stopped).
  ///
  /// Stops at the first invalid record.
  package static func parseRecords(_ bytes: [UInt8], from offset: Int) -> Parsed {
    var reader = ByteReader(bytes, at: offset)
    var keys: [String] = []
    var valid = offset
    while let length = reader.read(UInt32.self) {
      guard length >= 1, length <= maximumKeyLength,
        let keyBytes = reader.readBytes(Int(length)),
        let checksum = reader.read(UInt32.self),
        checksum == CRC32.checksum(bytes[valid..<valid + 4 + Int(length)]),
        let key = String(validating: keyBytes, as: UTF8.self)
      else { break }
      keys.append(key)
      valid = reader.readerIndex
    }
    return Parsed(keys: keys, validLength: valid)
  }
}
