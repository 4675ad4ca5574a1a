import AppGroups

/// Feeds arbitrary bytes to the shared-defaults file reader.
///
/// Reading must never crash; a file that reads must re-encode to bytes that read back and
/// re-encode identically (bytes, not values, so NaN compares equal to itself).
public func fuzz(_ bytes: [UInt8]) {
  if let values = try? DefaultsFile.decode(bytes) {
    // What reads, writes: the reader refuses the dates the writer refuses.
    guard let encoded = try? DefaultsFile.encode(values) else {
      preconditionFailure("a defaults file that reads does not encode")
    }
    guard let again = try? DefaultsFile.decode(encoded) else {
      preconditionFailure("a re-encoded defaults file does not decode")
    }
    precondition(
      (try? DefaultsFile.encode(again)) == encoded, "defaults round trip changed the values")
  }
}
