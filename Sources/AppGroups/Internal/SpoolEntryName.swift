/// The name of an entry directory in `new/`, `cur/` and `corrupt/`:
/// `<enqueue time, 16 decimal digits of microseconds>.<total bytes>.<id>`.
///
/// The time and size come first so that a listing gives the handover order and the quota
/// figures without opening any entry.
package struct SpoolEntryName: Hashable, Sendable, Comparable {
  var time: Int64
  var bytes: Int64
  var id: String

  package var rawValue: String {
    let digits = String(time)
    return String(repeating: "0", count: max(0, 16 - digits.count)) + digits + "."
      + String(bytes) + "." + id
  }

  package init(time: Int64, bytes: Int64, id: String) {
    self.time = time
    self.bytes = bytes
    self.id = id
  }

  /// Parses a name, returning `nil` for anything that is not an entry name.
  package init?(_ name: String) {
    let parts = name.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
    guard parts.count == 3, parts[0].utf8.count == 16,
      parts[0].utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
      parts[1].utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
      let time = Int64(parts[0]), let bytes = Int64(parts[1]),
      (try? SafeName.checkPortable(String(parts[2]), kind: "entry id")) != nil
    else { return nil }
    self.init(time: time, bytes: bytes, id: String(parts[2]))
    guard rawValue == name else { return nil }
  }

  /// The byte count in a raw entry name, or `nil` when the name is not an entry name's shape.
  ///
  /// Parses bytes in place, for quota listings.
  package static func byteCount(inRawName name: UnsafeRawBufferPointer) -> Int64? {
    guard name.count > 18, name[16] == UInt8(ascii: ".") else { return nil }
    var value: Int64 = 0
    var index = 17
    while index < name.count, name[index] != UInt8(ascii: ".") {
      let digit = name[index] &- UInt8(ascii: "0")
      guard digit < 10, value < Int64.max / 100 else { return nil }
      value = value * 10 + Int64(digit)
      index += 1
    }
    return index > 17 && index < name.count ? value : nil
  }

  /// Handover order: enqueue time, then id, then the rest of the name.
  package static func < (lhs: Self, rhs: Self) -> Bool {
    (lhs.time, lhs.id, lhs.bytes) < (rhs.time, rhs.id, rhs.bytes)
  }
}
