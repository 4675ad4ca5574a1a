/// CRC-32 as used by zlib, PNG and Ethernet (IEEE 802.3: reflected polynomial 0xEDB88320,
/// initial value and final XOR 0xFFFFFFFF), computed slicing-by-8.
///
/// `CRC32.checksum("123456789".utf8)` is `0xCBF43926`.
struct CRC32: Sendable {
  /// The running register, already inverted.
  private var state: UInt32 = 0xFFFF_FFFF

  init() {}

  /// The checksum of everything fed so far.
  var value: UInt32 { ~state }

  /// Feeds bytes.
  mutating func update(_ bytes: UnsafeRawBufferPointer) {
    var crc = state
    var index = 0
    let count = bytes.count
    Self.table.withUnsafeBufferPointer { table in
      while count - index >= 8 {
        let low =
          crc
          ^ (UInt32(bytes[index]) | UInt32(bytes[index + 1]) << 8
            | UInt32(bytes[index + 2]) << 16 | UInt32(bytes[index + 3]) << 24)
        let high =
          UInt32(bytes[index + 4]) | UInt32(bytes[index + 5]) << 8
          | UInt32(bytes[index + 6]) << 16 | UInt32(bytes[index + 7]) << 24
        crc =
          table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int((low >> 8) & 0xFF)]
          ^ table[5 * 256 + Int((low >> 16) & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
          ^ table[3 * 256 + Int(high & 0xFF)] ^ table[2 * 256 + Int((high >> 8) & 0xFF)]
          ^ table[1 * 256 + Int((high >> 16) & 0xFF)] ^ table[Int(high >> 24)]
        index += 8
      }
      while index < count {
        crc = table[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
        index += 1
      }
    }
    state = crc
  }

  /// Feeds bytes.
  mutating func update(_ bytes: some Sequence<UInt8>) {
    let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
      update(UnsafeRawBufferPointer(buffer))
    }
    if done == nil {
      let copy = Array(bytes)
      copy.withUnsafeBytes { update($0) }
    }
  }

  /// The checksum of `bytes`.
  static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
    var crc = CRC32()
    crc.update(bytes)
    return crc.value
  }

  /// Eight 256-entry tables: table 0 is the classic byte table, table k advances k bytes.
  private static let table: [UInt32] = {
    var table = [UInt32](repeating: 0, count: 8 * 256)
    for byte in 0..<256 {
      var crc = UInt32(byte)
      for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
      table[byte] = crc
    }
    for byte in 0..<256 {
      for slice in 1..<8 {
        let previous = table[(slice - 1) * 256 + byte]
        table[slice * 256 + byte] = (previous >> 8) ^ table[Int(previous & 0xFF)]
      }
    }
    return table
  }()
}
