import Foundation

/// Apple's binary property-list format (`bplist00`), read and written in Swift.
///
/// The reader accepts exactly the binary format (no text fallback), never reads out of
/// bounds, refuses cycles, nesting deeper than ``Limits/maximumDepth`` and documents that
/// would expand to more than ``Limits/maximumValues`` values (shared objects can otherwise
/// explode), and keeps Booleans, integers and reals apart. It exists because
/// swift-corelibs-foundation 6.3.1 crashes on some malformed binary property lists. Layout,
/// after Apple's `CFBinaryPList.c` documentation:
///
/// ```
/// "bplist00" | objects | offset table | trailer (32 bytes):
///   6 unused, u8 offset size, u8 object-reference size,
///   u64 object count, u64 top object, u64 offset-table offset   (all big-endian)
/// ```
/// Object markers: `0x08`/`0x09` false/true, `0x1n` integer of 2ⁿ bytes, `0x2n` real of 2ⁿ
/// bytes, `0x33` date (float64 seconds since 2001-01-01), `0x4n` data, `0x5n` ASCII string,
/// `0x6n` UTF-16BE string, `0xAn` array, `0xDn` dictionary; a count nibble of 15 is followed
/// by an integer object holding the count. Sets and UIDs are refused.
public enum BinaryPropertyList {
  /// How much a document may hold.
  public struct Limits: Hashable, Sendable {
    /// How deeply containers may nest.
    public var maximumDepth: Int
    /// How many values the document may expand to, counting each use of a shared object.
    public var maximumValues: Int

    public init(maximumDepth: Int = 256, maximumValues: Int = 1 << 20) {
      self.maximumDepth = maximumDepth
      self.maximumValues = maximumValues
    }
  }

  /// Whether `bytes` start with the binary property-list magic.
  public static func isBinaryPropertyList(_ bytes: some Sequence<UInt8>) -> Bool {
    bytes.starts(with: "bplist0".utf8)
  }

  /// Reads a whole binary property list.
  ///
  /// - Throws: ``PropertyListError`` saying what is wrong, for any malformed input.
  public static func decode(_ bytes: [UInt8], limits: Limits = Limits()) throws(PropertyListError)
    -> PropertyListValue
  {
    var reader = try Reader(bytes, limits: limits)
    return try reader.value(reader.topObject, depth: 0)
  }

  // MARK: - Reading

  private struct Reader {
    let bytes: [UInt8]
    let limits: Limits
    let offsetSize: Int
    let referenceSize: Int
    let objectCount: Int
    let offsetTable: Int
    var produced = 0
    /// The containers being read, to refuse one that holds itself.
    var ancestors: Set<Int> = []

    typealias Failure = PropertyListError

    init(_ bytes: [UInt8], limits: Limits) throws(Failure) {
      guard bytes.count >= 8 + 1 + 32, bytes[0..<8].elementsEqual("bplist00".utf8) else {
        throw Failure("it is not a binary property list (no 'bplist00' header and trailer)")
      }
      self.bytes = bytes
      self.limits = limits
      let trailer = bytes.count - 32
      offsetSize = Int(bytes[trailer + 6])
      referenceSize = Int(bytes[trailer + 7])
      let count = Self.bigEndian(bytes, at: trailer + 8, size: 8)
      let top = Self.bigEndian(bytes, at: trailer + 16, size: 8)
      let table = Self.bigEndian(bytes, at: trailer + 24, size: 8)
      guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
        throw Failure("the trailer's integer sizes are invalid")
      }
      guard count >= 1, count <= UInt64(trailer), top < count, table >= 9,
        table <= UInt64(trailer),
        count.multipliedReportingOverflow(by: UInt64(offsetSize)).partialValue
          <= UInt64(trailer) - table,
        !count.multipliedReportingOverflow(by: UInt64(offsetSize)).overflow
      else { throw Failure("the trailer's object count or offset table is out of range") }
      objectCount = Int(count)
      offsetTable = Int(table)
      topObject = Int(top)
    }

    let topObject: Int

    static func bigEndian(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64 {
      var value: UInt64 = 0
      for index in offset..<offset + size { value = value << 8 | UInt64(bytes[index]) }
      return value
    }

    func offset(ofObject index: Int) throws(Failure) -> Int {
      let offset = Self.bigEndian(bytes, at: offsetTable + index * offsetSize, size: offsetSize)
      guard offset >= 8, offset < UInt64(offsetTable) else {
        throw Failure("object \(index) has an offset outside the object area")
      }
      return Int(offset)
    }

    /// Reads `count` bytes at `offset`, which must lie before the offset table.
    func range(_ offset: Int, _ count: Int) throws(Failure) -> Range<Int> {
      guard count >= 0, offset <= offsetTable, count <= offsetTable - offset else {
        throw Failure("an object runs past the object area")
      }
      return offset..<offset + count
    }

    /// The count of a container or string object whose marker is at `offset`, and where
    /// its contents start.
    func count(at offset: Int) throws(Failure) -> (count: Int, start: Int) {
      let nibble = Int(bytes[offset] & 0x0F)
      guard nibble == 0x0F else { return (nibble, offset + 1) }
      _ = try range(offset + 1, 1)
      let marker = bytes[offset + 1]
      guard marker & 0xF0 == 0x10, marker & 0x0F <= 3 else {
        throw Failure("a count is not an integer object")
      }
      let size = 1 << Int(marker & 0x0F)
      let span = try range(offset + 2, size)
      let value = Self.bigEndian(bytes, at: span.lowerBound, size: size)
      guard value <= UInt64(offsetTable) else { throw Failure("a count is larger than the file") }
      return (Int(value), span.upperBound)
    }

    func reference(at offset: Int) throws(Failure) -> Int {
      let span = try range(offset, referenceSize)
      let index = Self.bigEndian(bytes, at: span.lowerBound, size: referenceSize)
      guard index < UInt64(objectCount) else {
        throw Failure("an object reference is out of range")
      }
      return Int(index)
    }

    mutating func value(_ index: Int, depth: Int) throws(Failure) -> PropertyListValue {
      guard depth < limits.maximumDepth else {
        throw Failure("values are nested deeper than \(limits.maximumDepth)")
      }
      produced += 1
      guard produced <= limits.maximumValues else {
        throw Failure("the file expands to more than \(limits.maximumValues) values")
      }
      let offset = try offset(ofObject: index)
      let marker = bytes[offset]
      switch marker >> 4 {
      case 0x0:
        switch marker {
        case 0x08: return .bool(false)
        case 0x09: return .bool(true)
        default: throw Failure("marker \(hex(marker)) (null or fill) is not a value")
        }
      case 0x1:
        let exponent = Int(marker & 0x0F)
        guard exponent <= 4 else { throw Failure("an integer wider than 128 bits") }
        let size = 1 << exponent
        let span = try range(offset + 1, size)
        if size == 16 {
          // CoreFoundation writes unsigned values above Int64.max this way.
          let high = Self.bigEndian(bytes, at: span.lowerBound, size: 8)
          let low = Self.bigEndian(bytes, at: span.lowerBound + 8, size: 8)
          guard high == 0 else { throw Failure("a 128-bit integer does not fit in 64 bits") }
          return low <= UInt64(Int64.max) ? .integer(Int64(low)) : .double(Double(low))
        }
        let raw = Self.bigEndian(bytes, at: span.lowerBound, size: size)
        return .integer(size == 8 ? Int64(bitPattern: raw) : Int64(raw))
      case 0x2:
        switch marker & 0x0F {
        case 2:
          let span = try range(offset + 1, 4)
          let raw = UInt32(Self.bigEndian(bytes, at: span.lowerBound, size: 4))
          return .double(Double(Float(bitPattern: raw)))
        case 3:
          let span = try range(offset + 1, 8)
          return .double(Double(bitPattern: Self.bigEndian(bytes, at: span.lowerBound, size: 8)))
        default: throw Failure("a real has an unsupported width")
        }
      case 0x3:
        guard marker == 0x33 else { throw Failure("a date has an unsupported width") }
        let span = try range(offset + 1, 8)
        let seconds = Double(bitPattern: Self.bigEndian(bytes, at: span.lowerBound, size: 8))
        guard seconds.isFinite else { throw Failure("a date is not finite") }
        return .date(Date(timeIntervalSinceReferenceDate: seconds))
      case 0x4:
        let (count, start) = try count(at: offset)
        return .data(Data(bytes[try range(start, count)]))
      case 0x5:
        let (count, start) = try count(at: offset)
        let span = try range(start, count)
        guard bytes[span].allSatisfy({ $0 < 0x80 }) else {
          throw Failure("an ASCII string contains a non-ASCII byte")
        }
        return .string(String(decoding: bytes[span], as: UTF8.self))
      case 0x6:
        let (count, start) = try count(at: offset)
        guard count <= Int.max / 2 else { throw Failure("a string is too long") }
        let span = try range(start, count * 2)
        var units: [UInt16] = []
        units.reserveCapacity(count)
        for unit in stride(from: span.lowerBound, to: span.upperBound, by: 2) {
          units.append(UInt16(bytes[unit]) << 8 | UInt16(bytes[unit + 1]))
        }
        guard let string = String(validating: units, as: UTF16.self) else {
          throw Failure("a UTF-16 string is not valid UTF-16")
        }
        return .string(string)
      case 0xA:
        let (count, start) = try count(at: offset)
        guard ancestors.insert(index).inserted else {
          throw Failure("object \(index) contains itself")
        }
        defer { ancestors.remove(index) }
        guard count <= Int.max / referenceSize else { throw Failure("an array is too long") }
        _ = try range(start, count * referenceSize)
        var values: [PropertyListValue] = []
        values.reserveCapacity(count)
        for element in 0..<count {
          let child = try reference(at: start + element * referenceSize)
          values.append(try value(child, depth: depth + 1))
        }
        return .array(values)
      case 0xD:
        let (count, start) = try count(at: offset)
        guard ancestors.insert(index).inserted else {
          throw Failure("object \(index) contains itself")
        }
        defer { ancestors.remove(index) }
        guard count <= Int.max / (2 * referenceSize) else {
          throw Failure("a dictionary is too long")
        }
        _ = try range(start, 2 * count * referenceSize)
        var values: [String: PropertyListValue] = [:]
        values.reserveCapacity(count)
        for entry in 0..<count {
          let keyIndex = try reference(at: start + entry * referenceSize)
          guard case .string(let key) = try value(keyIndex, depth: depth + 1) else {
            throw Failure("a dictionary key is not a string")
          }
          let valueIndex = try reference(at: start + (count + entry) * referenceSize)
          values[key] = try value(valueIndex, depth: depth + 1)
        }
        return .dictionary(values)
      default:
        throw Failure("marker \(hex(marker)) (UID, set or unknown) is not supported")
      }
    }

    private func hex(_ byte: UInt8) -> String {
      "0x" + (byte < 16 ? "0" : "") + String(byte, radix: 16)
    }
  }

  // MARK: - Writing

  /// Encodes a value as a binary property list.
  ///
  /// Dictionary keys are written sorted, so equal values give equal bytes.
  ///
  /// - Throws: ``PropertyListError`` for a date that is not finite, which no reader accepts.
  public static func encode(_ root: PropertyListValue) throws(PropertyListError) -> [UInt8] {
    var objects: [[UInt8]] = []
    var pending: [(value: PropertyListValue, index: Int)] = []
    // First pass: number the objects breadth-first; containers refer to later indices.
    func reserve(_ value: PropertyListValue) -> Int {
      objects.append([])
      pending.append((value, objects.count - 1))
      return objects.count - 1
    }
    _ = reserve(root)
    var children: [Int: [Int]] = [:]
    var cursor = 0
    while cursor < pending.count {
      let (value, index) = pending[cursor]
      cursor += 1
      switch value {
      case .array(let elements):
        children[index] = elements.map { reserve($0) }
      case .dictionary(let entries):
        let keys = entries.keys.sorted()
        children[index] =
          keys.map { reserve(.string($0)) } + keys.map { reserve(entries[$0]!) }
      default:
        break
      }
    }
    let referenceSize = byteWidth(UInt64(objects.count))
    for (value, index) in pending {
      var out: [UInt8] = []
      switch value {
      case .bool(let flag): out = [flag ? 0x09 : 0x08]
      case .integer(let number): out = integerObject(number)
      case .double(let number):
        out = [0x23] + bigEndianBytes(number.bitPattern, size: 8)
      case .date(let date):
        let seconds = date.timeIntervalSinceReferenceDate
        guard seconds.isFinite else {
          throw PropertyListError("a date \(seconds) s from 2001-01-01 cannot be written")
        }
        out = [0x33] + bigEndianBytes(seconds.bitPattern, size: 8)
      case .data(let data): out = header(0x4, data.count) + Array(data)
      case .string(let string):
        if string.utf8.allSatisfy({ $0 < 0x80 }) {
          out = header(0x5, string.utf8.count) + Array(string.utf8)
        } else {
          let units = Array(string.utf16)
          out = header(0x6, units.count)
          for unit in units { out += [UInt8(unit >> 8), UInt8(unit & 0xFF)] }
        }
      case .array(let elements):
        out = header(0xA, elements.count)
        for child in children[index] ?? [] {
          out += bigEndianBytes(UInt64(child), size: referenceSize)
        }
      case .dictionary(let entries):
        out = header(0xD, entries.count)
        for child in children[index] ?? [] {
          out += bigEndianBytes(UInt64(child), size: referenceSize)
        }
      }
      objects[index] = out
    }
    var bytes = Array("bplist00".utf8)
    var offsets: [Int] = []
    offsets.reserveCapacity(objects.count)
    for object in objects {
      offsets.append(bytes.count)
      bytes += object
    }
    let tableOffset = bytes.count
    let offsetSize = byteWidth(UInt64(tableOffset))
    for offset in offsets { bytes += bigEndianBytes(UInt64(offset), size: offsetSize) }
    bytes += [0, 0, 0, 0, 0, 0, UInt8(offsetSize), UInt8(referenceSize)]
    bytes += bigEndianBytes(UInt64(objects.count), size: 8)
    bytes += bigEndianBytes(UInt64(0), size: 8)
    bytes += bigEndianBytes(UInt64(tableOffset), size: 8)
    return bytes
  }

  private static func byteWidth(_ value: UInt64) -> Int {
    value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8
  }

  private static func bigEndianBytes(_ value: UInt64, size: Int) -> [UInt8] {
    (0..<size).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
  }

  /// An integer object: the smallest unsigned width for small non-negative values, else
  /// eight bytes, which readers treat as signed.
  private static func integerObject(_ value: Int64) -> [UInt8] {
    if value >= 0 && value <= 0xFF { return [0x10] + bigEndianBytes(UInt64(value), size: 1) }
    if value >= 0 && value <= 0xFFFF { return [0x11] + bigEndianBytes(UInt64(value), size: 2) }
    if value >= 0 && value <= 0xFFFF_FFFF {
      return [0x12] + bigEndianBytes(UInt64(value), size: 4)
    }
    return [0x13] + bigEndianBytes(UInt64(bitPattern: value), size: 8)
  }

  private static func header(_ type: UInt8, _ count: Int) -> [UInt8] {
    if count < 15 { return [type << 4 | UInt8(count)] }
    return [type << 4 | 0x0F] + integerObject(Int64(count))
  }
}
