/// Remembers which posts of which bridges were delivered, so a post that arrives twice
/// (a QoS 1 redelivery, or the same post through two brokers) is delivered once.
///
/// Per origin it keeps the highest sequence number seen and a window of the
/// ``window`` numbers below it. A number below the window is delivered (a missed
/// post is worse than a repeated one) and counted as late.
package struct DuplicateFilter {
  /// How far back, in sequence numbers, repeats are recognised.
  package static let window: UInt64 = 1024
  /// The most origins remembered; the least recently heard is forgotten first.
  package static let maximumOrigins = 4096

  private struct Track {
    var highest: UInt64
    /// Bit `i` of word `i / 64`: whether `highest - i` was seen.
    var seen: [UInt64]
    var lastUse: UInt64
  }

  private var tracks: [BridgeOrigin: Track] = [:]
  private var clock: UInt64 = 0

  /// An empty filter.
  package init() {}

  /// What ``admit(_:)`` decided.
  package enum Verdict: Equatable, Sendable {
    case new
    case duplicate
    case late
  }

  /// Records a stamp and says whether its post is new.
  ///
  /// The origin is looked up once and its window updated in place: a post from a known
  /// origin allocates nothing.
  package mutating func admit(_ stamp: BridgeStamp) -> Verdict {
    clock += 1
    guard let index = tracks.index(forKey: stamp.origin) else {
      if tracks.count >= Self.maximumOrigins,
        let oldest = tracks.min(by: { $0.value.lastUse < $1.value.lastUse })
      {
        tracks[oldest.key] = nil
      }
      var seen = [UInt64](repeating: 0, count: Int(Self.window / 64))
      seen[0] = 1
      tracks[stamp.origin] = Track(highest: stamp.sequence, seen: seen, lastUse: clock)
      return .new
    }
    let now = clock
    return Self.admit(stamp.sequence, into: &tracks.values[index], at: now)
  }

  private static func admit(_ sequence: UInt64, into track: inout Track, at now: UInt64)
    -> Verdict
  {
    track.lastUse = now
    if sequence > track.highest {
      shift(&track.seen, by: sequence - track.highest)
      track.seen[0] |= 1
      track.highest = sequence
      return .new
    }
    let offset = track.highest - sequence
    guard offset < window else { return .late }
    let word = Int(offset / 64)
    let bit = UInt64(1) << (offset % 64)
    if track.seen[word] & bit != 0 { return .duplicate }
    track.seen[word] |= bit
    return .new
  }

  /// Forgets that `stamp` was seen, if it is still in its origin's window (its post could
  /// not be made, so its next arrival must be delivered).
  package mutating func forget(_ stamp: BridgeStamp) {
    guard let track = tracks[stamp.origin], stamp.sequence <= track.highest else { return }
    let offset = track.highest - stamp.sequence
    guard offset < Self.window else { return }
    tracks[stamp.origin]!.seen[Int(offset / 64)] &= ~(UInt64(1) << (offset % 64))
  }

  /// The window moved `shift` numbers up: bit i becomes bit i + shift, in place.
  private static func shift(_ seen: inout [UInt64], by shift: UInt64) {
    guard shift < window else {
      for index in seen.indices { seen[index] = 0 }
      return
    }
    let wordShift = Int(shift / 64)
    let bitShift = shift % 64
    // From the top down, so each word is read before it is overwritten.
    for index in stride(from: seen.count - 1, through: 0, by: -1) {
      guard index >= wordShift else {
        seen[index] = 0
        continue
      }
      var value = seen[index - wordShift] << bitShift
      if bitShift > 0 && index - wordShift - 1 >= 0 {
        value |= seen[index - wordShift - 1] >> (64 - bitShift)
      }
      seen[index] = value
    }
  }
}
