import AppGroups

/// Feeds arbitrary bytes to the spool's entry-file parser and entry-name parser.
///
/// Decoding must never crash, read out of bounds or allocate more than the input; a
/// successful decode must re-encode to the same bytes.
public func fuzz(_ bytes: [UInt8]) {
  if let decoded = try? SpoolEntryFormat.decode(bytes) {
    let again = SpoolEntryFormat.encode(
      enqueueTime: decoded.enqueueTime, id: decoded.id, attachments: decoded.attachments,
      payload: Array(decoded.payload))
    precondition(again == bytes, "decode/encode round trip changed the bytes")
  }
  let name = String(decoding: bytes.prefix(300), as: UTF8.self)
  if let parsed = SpoolEntryName(name) {
    precondition(parsed.rawValue == name, "entry name round trip changed the name")
  }
  _ = bytes.prefix(300).withUnsafeBytes { SpoolEntryName.byteCount(inRawName: $0) }
}
