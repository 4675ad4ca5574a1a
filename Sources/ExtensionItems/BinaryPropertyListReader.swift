import Foundation

/// Reads Apple's binary property-list format (`bplist00`) into a ``PropertyListValue``.
///
/// Written here rather than delegated to Foundation because swift-corelibs-foundation 6.3.1
/// crashes on some malformed binary property lists. Every offset, count and reference is
/// checked; sets and UIDs (which a manifest never holds) are rejected; cycles are rejected;
/// and shared references cannot expand without bound, because the reader stops after
/// ``maximumValueCount`` values and ``maximumDepth`` levels.
struct BinaryPropertyListReader {
  /// Why the bytes are not a binary property list this reader accepts.
  struct Failure: Error {
    var message: String
  }

  static let maximumValueCount = 262_144
  static let maximumDepth = 64

  private let bytes: [UInt8]
  private let objectOffsets: [Int]
  private let referenceSize: Int
  private let objectTableEnd: Int
  private let topObject: Int
  private var valueCount = 0
  private var ancestors: Set<Int> = []

  /// Whether `data` starts with the binary property-list magic.
  static func isBinaryPropertyList(_ data: Data) -> Bool {
    data.starts(with: Array("bplist0".utf8))
  }

  /// Reads the whole property list.
  static func read(_ data: Data) throws(Failure) -> PropertyListValue {
    var reader = try BinaryPropertyListReader(Array(data))
    return try reader.value(reader.topObject, depth: 0)
  }

  private init(_ bytes: [UInt8]) throws(Failure) {
    guard bytes.count >= 8 + 1 + 32, bytes.starts(with: Array("bplist00".utf8)) else {
      throw Failure(message: "not a bplist00 file, or too short for its trailer")
    }
    self.bytes = bytes
    let trailer = bytes.count - 32
    let offsetSize = Int(bytes[trailer + 6])
    referenceSize = Int(bytes[trailer + 7])
    let count = Self.bigEndian(bytes, at: trailer + 8, size: 8)
    let top = Self.bigEndian(bytes, at: trailer + 16, size: 8)
    let tableOffset = Self.bigEndian(bytes, at: trailer + 24, size: 8)
    guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else {
      throw Failure(message: "the trailer's integer sizes are not 1...8")
    }
    guard count > 0, count <= UInt64(bytes.count), top < count else {
      throw Failure(message: "the trailer's object count or top object is out of range")
    }
    guard tableOffset >= 9, tableOffset <= UInt64(trailer),
      UInt64(trailer) - tableOffset >= count * UInt64(offsetSize)
    else {
      throw Failure(message: "the offset table does not fit before the trailer")
    }
    objectTableEnd = Int(tableOffset)
    topObject = Int(top)
    var offsets: [Int] = []
    offsets.reserveCapacity(Int(count))
    for index in 0..<Int(count) {
      let offset = Self.bigEndian(bytes, at: objectTableEnd + index * offsetSize, size: offsetSize)
      guard offset >= 8, offset < tableOffset else {
        throw Failure(message: "object \(index) starts outside the object table")
      }
      offsets.append(Int(offset))
    }
    objectOffsets = offsets
  }

  private static func bigEndian(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64 {
    var value: UInt64 = 0
    for index in offset..<offset + size { value = value << 8 | UInt64(bytes[index]) }
    return value
  }

  /// Reads `size` bytes at `offset`, which must lie inside the object table.
  private func read(at offset: Int, size: Int) throws(Failure) -> UInt64 {
    guard size <= 8, offset >= 0, offset <= objectTableEnd - size else {
      throw Failure(message: "an object runs past the object table at byte \(offset)")
    }
    return Self.bigEndian(bytes, at: offset, size: size)
  }

  /// The element count of a container or string marker, and where its contents start.
  private func count(marker: UInt8, at offset: Int) throws(Failure) -> (Int, Int) {
    let low = Int(marker & 0x0F)
    guard low == 0x0F else { return (low, offset + 1) }
    guard offset + 1 < objectTableEnd else {
      throw Failure(message: "a count runs past the object table at byte \(offset)")
    }
    let intMarker = bytes[offset + 1]
    guard intMarker & 0xF0 == 0x10, intMarker & 0x0F <= 3 else {
      throw Failure(message: "a count is not an integer at byte \(offset + 1)")
    }
    let size = 1 << Int(intMarker & 0x0F)
    let value = try read(at: offset + 2, size: size)
    guard value <= UInt64(objectTableEnd) else {
      throw Failure(message: "a count of \(value) exceeds the file at byte \(offset)")
    }
    return (Int(value), offset + 2 + size)
  }

  private func reference(at offset: Int) throws(Failure) -> Int {
    let reference = try read(at: offset, size: referenceSize)
    guard reference < UInt64(objectOffsets.count) else {
      throw Failure(message: "a reference to object \(reference) is out of range")
    }
    return Int(reference)
  }

  private mutating func value(_ object: Int, depth: Int) throws(Failure) -> PropertyListValue {
    valueCount += 1
    guard valueCount <= Self.maximumValueCount else {
      throw Failure(message: "more than \(Self.maximumValueCount) values")
    }
    guard depth <= Self.maximumDepth else {
      throw Failure(message: "containers nest deeper than \(Self.maximumDepth)")
    }
    let offset = objectOffsets[object]
    let marker = bytes[offset]
    switch marker >> 4 {
    case 0x0:
      switch marker {
      case 0x08: return .bool(false)
      case 0x09: return .bool(true)
      default: throw Failure(message: "null and fill objects are not property-list values")
      }
    case 0x1:
      let sizeCode = Int(marker & 0x0F)
      switch sizeCode {
      case 0...2:
        return .integer(Int64(try read(at: offset + 1, size: 1 << sizeCode)))
      case 3:
        return .integer(Int64(bitPattern: try read(at: offset + 1, size: 8)))
      case 4:
        let high = try read(at: offset + 1, size: 8)
        let low = try read(at: offset + 9, size: 8)
        guard high == 0 else { throw Failure(message: "a 128-bit integer does not fit") }
        return low <= UInt64(Int64.max) ? .integer(Int64(low)) : .double(Double(low))
      default:
        throw Failure(message: "an integer of unknown size at byte \(offset)")
      }
    case 0x2:
      switch marker & 0x0F {
      case 2: return .double(Double(Float(bitPattern: UInt32(try read(at: offset + 1, size: 4)))))
      case 3: return .double(Double(bitPattern: try read(at: offset + 1, size: 8)))
      default: throw Failure(message: "a real of unknown size at byte \(offset)")
      }
    case 0x3:
      guard marker == 0x33 else { throw Failure(message: "a date of unknown size") }
      let seconds = Double(bitPattern: try read(at: offset + 1, size: 8))
      return .date(Date(timeIntervalSinceReferenceDate: seconds))
    case 0x4:
      let (length, start) = try count(marker: marker, at: offset)
      guard start + length <= objectTableEnd else {
        throw Failure(message: "data runs past the object table at byte \(offset)")
      }
      return .data(Data(bytes[start..<start + length]))
    case 0x5:
      let (length, start) = try count(marker: marker, at: offset)
      guard start + length <= objectTableEnd else {
        throw Failure(message: "a string runs past the object table at byte \(offset)")
      }
      let ascii = bytes[start..<start + length]
      guard ascii.allSatisfy({ $0 < 0x80 }) else {
        throw Failure(message: "an ASCII string holds a non-ASCII byte at byte \(offset)")
      }
      return .string(String(decoding: ascii, as: UTF8.self))
    case 0x6:
      let (units, start) = try count(marker: marker, at: offset)
      guard units <= (objectTableEnd - start) / 2 else {
        throw Failure(message: "a string runs past the object table at byte \(offset)")
      }
      var code: [UInt16] = []
      code.reserveCapacity(units)
      for index in 0..<units {
        code.append(UInt16(bytes[start + 2 * index]) << 8 | UInt16(bytes[start + 2 * index + 1]))
      }
      guard let string = String(validating: code, as: UTF16.self) else {
        throw Failure(message: "a UTF-16 string is not valid at byte \(offset)")
      }
      return .string(string)
    case 0xA, 0xD:
      let (length, start) = try count(marker: marker, at: offset)
      let isDictionary = marker >> 4 == 0xD
      let referenceBytes = length * referenceSize * (isDictionary ? 2 : 1)
      guard referenceBytes <= objectTableEnd - start else {
        throw Failure(message: "a container runs past the object table at byte \(offset)")
      }
      guard ancestors.insert(object).inserted else {
        throw Failure(message: "object \(object) contains itself")
      }
      defer { ancestors.remove(object) }
      if !isDictionary {
        var elements: [PropertyListValue] = []
        elements.reserveCapacity(length)
        for index in 0..<length {
          let child = try reference(at: start + index * referenceSize)
          elements.append(try value(child, depth: depth + 1))
        }
        return .array(elements)
      }
      var entries: [String: PropertyListValue] = [:]
      entries.reserveCapacity(length)
      for index in 0..<length {
        let keyObject = try reference(at: start + index * referenceSize)
        guard case .string(let key) = try value(keyObject, depth: depth + 1) else {
          throw Failure(message: "a dictionary key is not a string at byte \(offset)")
        }
        let valueObject = try reference(at: start + (length + index) * referenceSize)
        entries[key] = try value(valueObject, depth: depth + 1)
      }
      return .dictionary(entries)
    default:
      throw Failure(
        message: "object type 0x\(String(marker >> 4, radix: 16)) at byte \(offset) "
          + "(a set, UID or unknown type) is not a property-list value")
    }
  }
}
