/// The `entry` file of a spool entry: a fixed header, the id, the attachment manifest, the payload
/// and a trailing CRC-32.
///
/// Documented byte for byte in `Protocol/container.md`.
///
/// ```
/// offset  size  field
///  0      4     magic "NBSE"
///  4      2     version, 1
///  6      2     flags, 0 (reserved)
///  8      8     enqueue time, microseconds since the Unix epoch (signed)
/// 16      2     id length L (1...128)
/// 18      2     attachment count A (0...1024)
/// 20      4     reserved, 0
/// 24      8     payload length P
/// 32      4     CRC-32 of bytes 0..<32
/// 36      L     id
///  …      A ×   { u16 name length N, N bytes of UTF-8 name, u64 size, u32 CRC-32 of the file }
///  …      P     payload
///  end-4  4     CRC-32 of every byte before it
/// ```
/// All integers are little-endian.
package enum SpoolEntryFormat {
  /// The name of the entry file inside an entry directory.
  static let entryFileName = "entry"
  static let magic: [UInt8] = Array("NBSE".utf8)
  static let version: UInt16 = 1
  static let headerSize = 36
  static let maximumAttachments = 1024
  static let maximumIDLength = 128

  /// One attachment as the manifest records it.
  package struct Attachment: Hashable, Sendable {
    var name: String
    var size: UInt64
    var checksum: UInt32
  }

  /// A decoded entry file.
  package struct Decoded: Sendable {
    package var enqueueTime: Int64
    package var id: String
    package var attachments: [Attachment]
    package var payload: ArraySlice<UInt8>
  }

  /// Why an entry file is invalid.
  package struct Failure: Error, Sendable, Hashable {
    var reason: String
    init(_ reason: String) { self.reason = reason }
  }

  /// Encodes an entry file.
  package static func encode(
    enqueueTime: Int64, id: String, attachments: [Attachment], payload: [UInt8]
  ) -> [UInt8] {
    var writer = ByteWriter()
    writer.bytes.reserveCapacity(headerSize + id.utf8.count + payload.count + 64)
    writer.append(contentsOf: magic)
    writer.append(version)
    writer.append(UInt16(0))
    writer.append(enqueueTime)
    writer.append(UInt16(id.utf8.count))
    writer.append(UInt16(attachments.count))
    writer.append(UInt32(0))
    writer.append(UInt64(payload.count))
    writer.append(CRC32.checksum(writer.bytes))
    writer.append(contentsOf: id.utf8)
    for attachment in attachments {
      writer.append(UInt16(attachment.name.utf8.count))
      writer.append(contentsOf: attachment.name.utf8)
      writer.append(attachment.size)
      writer.append(attachment.checksum)
    }
    writer.append(contentsOf: payload)
    writer.append(CRC32.checksum(writer.bytes))
    return writer.bytes
  }

  /// Decodes and validates an entry file.
  ///
  /// Never reads out of bounds and never allocates more than the input's size.
  package static func decode(_ bytes: [UInt8]) throws(Failure) -> Decoded {
    guard bytes.count >= headerSize + 4 else {
      throw Failure("the file is \(bytes.count) bytes, shorter than the smallest entry")
    }
    guard bytes[0..<4].elementsEqual(magic) else { throw Failure("the magic is not 'NBSE'") }
    var reader = ByteReader(bytes, at: 4)
    let version = reader.read(UInt16.self)!
    guard version == Self.version else {
      throw Failure("format version \(version) is not supported (expected \(Self.version))")
    }
    let flags = reader.read(UInt16.self)!
    let time = reader.read(Int64.self)!
    let idLength = Int(reader.read(UInt16.self)!)
    let attachmentCount = Int(reader.read(UInt16.self)!)
    let reserved = reader.read(UInt32.self)!
    let payloadLength = reader.read(UInt64.self)!
    let headerChecksum = reader.read(UInt32.self)!
    guard headerChecksum == CRC32.checksum(bytes[0..<32]) else {
      throw Failure("the header checksum does not match")
    }
    guard flags == 0, reserved == 0 else { throw Failure("reserved header fields are not zero") }
    guard (1...maximumIDLength).contains(idLength) else {
      throw Failure("the id length \(idLength) is outside 1...\(maximumIDLength)")
    }
    guard attachmentCount <= maximumAttachments else {
      throw Failure("\(attachmentCount) attachments exceed the limit of \(maximumAttachments)")
    }
    guard payloadLength <= UInt64(bytes.count) else {
      throw Failure("the payload length \(payloadLength) exceeds the file size")
    }
    let trailer = bytes.count - 4
    let storedChecksum = ByteReader(bytes, at: trailer).readLittleEndianUInt32()
    guard storedChecksum == CRC32.checksum(bytes[0..<trailer]) else {
      throw Failure("the file checksum does not match (truncated or damaged)")
    }
    guard let idBytes = reader.readBytes(idLength),
      let id = String(validating: idBytes, as: UTF8.self),
      (try? SafeName.checkPortable(id, kind: "entry id")) != nil
    else { throw Failure("the id is not a valid entry id") }
    var attachments: [Attachment] = []
    var names = Set<String>()
    for index in 0..<attachmentCount {
      guard let nameLength = reader.read(UInt16.self),
        let nameBytes = reader.readBytes(Int(nameLength)),
        let name = String(validating: nameBytes, as: UTF8.self),
        let size = reader.read(UInt64.self),
        let checksum = reader.read(UInt32.self)
      else { throw Failure("attachment record \(index) runs past the end of the file") }
      guard (try? SafeName.checkAttachment(name)) != nil else {
        throw Failure("attachment record \(index) has an invalid name")
      }
      guard names.insert(name).inserted else {
        throw Failure("attachment '\(name)' is listed twice")
      }
      attachments.append(Attachment(name: name, size: size, checksum: checksum))
    }
    guard UInt64(trailer - reader.readerIndex) == payloadLength else {
      throw Failure(
        "the payload length \(payloadLength) does not match the \(trailer - reader.readerIndex) "
          + "bytes present")
    }
    let payload = bytes[reader.readerIndex..<trailer]
    return Decoded(enqueueTime: time, id: id, attachments: attachments, payload: payload)
  }
}

extension ByteReader {
  fileprivate func readLittleEndianUInt32() -> UInt32 {
    var copy = self
    return copy.read(UInt32.self) ?? 0
  }
}
