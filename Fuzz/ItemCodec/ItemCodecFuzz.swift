// libFuzzer harness for the item codec's decoders (binary and JSON).
//
// Any input must either be rejected with an ItemCodecError or decode into items that encode
// again and decode back to the same items. Crashes, hangs and unbounded allocation
// (libFuzzer's -rss_limit_mb, 2048 MB by default) are failures.
//
// The seed corpus in corpus/ holds messages written by this codec (each sample item alone,
// all of them, none) and by GLib (little and big endian, with a SENDER header field and a
// non-empty extension dictionary).

import ExtensionItems
import Foundation

private let limits = ItemCodecLimits(maximumMessageSize: 1_048_576)

public func fuzz(_ bytes: [UInt8]) {
  if let items = try? ItemCodec.decode(bytes, limits: limits) {
    let encoded: [UInt8]
    do {
      encoded = try ItemCodec.encode(items, limits: limits)
    } catch {
      fatalError("decoded items do not encode again: \(error)")
    }
    guard let again = try? ItemCodec.decode(encoded, limits: limits), same(again, items) else {
      fatalError("re-encoded items do not decode to the same items")
    }
  }
  if bytes.first == UInt8(ascii: "{") {
    if let items = try? ItemCodec.decodeJSON(Data(bytes), limits: limits) {
      precondition((try? ItemCodec.encode(items, limits: limits)) != nil)
    }
  }
}

/// Equality that treats two NaNs with the same bits as equal.
private func same(_ a: [ExtensionItem], _ b: [ExtensionItem]) -> Bool {
  guard a.count == b.count else { return false }
  for (x, y) in zip(a, b) {
    guard x.attributedTitle == y.attributedTitle,
      x.attributedContentText == y.attributedContentText,
      x.attachments.count == y.attachments.count,
      same(.dictionary(x.customUserInfo), .dictionary(y.customUserInfo))
    else { return false }
    for (p, q) in zip(x.attachments, y.attachments) {
      guard p.representations == q.representations, p.suggestedName == q.suggestedName,
        p.preferredPresentationSize.width.bitPattern
          == q.preferredPresentationSize.width.bitPattern,
        p.preferredPresentationSize.height.bitPattern
          == q.preferredPresentationSize.height.bitPattern
      else { return false }
    }
  }
  return true
}

private func same(_ a: PropertyListValue, _ b: PropertyListValue) -> Bool {
  switch (a, b) {
  case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
  case (.date(let x), .date(let y)):
    return x.timeIntervalSinceReferenceDate.bitPattern
      == y.timeIntervalSinceReferenceDate.bitPattern
  case (.array(let x), .array(let y)):
    return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
  case (.dictionary(let x), .dictionary(let y)):
    return x.count == y.count
      && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? false }
  default: return a == b
  }
}
