/// The read and write rights of a reserved prefix for its owner, its group and everyone
/// else, written `rwrwrw` with `-` for a missing right (Darwin's `notify.conf` form).
public struct AccessMode: Hashable, Sendable, CustomStringConvertible {
  /// Who a right is for.
  public enum Class: Int, Sendable, CaseIterable {
    case owner = 0
    case group = 1
    case other = 2
  }

  /// Darwin's bits: read 1, write 2, shifted by 0 for the owner, 4 for the group and 8
  /// for others; `rwrwrw` is `0x333`.
  public var rawValue: UInt16

  /// Creates a mode from Darwin's bits.
  public init(rawValue: UInt16) { self.rawValue = rawValue & 0x333 }

  /// Parses six characters such as `rwr-r-`.
  ///
  /// - Returns: `nil` when the text is not of that form.
  public init?(parsing text: some Collection<UInt8>) {
    let bytes = Array(text)
    guard bytes.count == 6 else { return nil }
    var value: UInt16 = 0
    for classIndex in 0..<3 {
      let read = bytes[classIndex * 2]
      let write = bytes[classIndex * 2 + 1]
      switch read {
      case UInt8(ascii: "r"): value |= 1 << (classIndex * 4)
      case UInt8(ascii: "-"): break
      default: return nil
      }
      switch write {
      case UInt8(ascii: "w"): value |= 2 << (classIndex * 4)
      case UInt8(ascii: "-"): break
      default: return nil
      }
    }
    rawValue = value
  }

  /// Whether `who` may read.
  public func canRead(_ who: Class) -> Bool { rawValue & (1 << (who.rawValue * 4)) != 0 }

  /// Whether `who` may write (post and set state).
  public func canWrite(_ who: Class) -> Bool { rawValue & (2 << (who.rawValue * 4)) != 0 }

  public var description: String {
    Class.allCases.map { (canRead($0) ? "r" : "-") + (canWrite($0) ? "w" : "-") }.joined()
  }
}
