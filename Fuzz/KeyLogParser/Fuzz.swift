import AppGroups

/// Feeds arbitrary bytes to the key-log parser used by dedupe sets and delivered ids.
///
/// Parsing must never crash, and must stop at a record boundary inside the input.
public func fuzz(_ bytes: [UInt8]) {
  if (try? KeyLogFormat.checkHeader(bytes)) != nil {
    let parsed = KeyLogFormat.parseRecords(bytes, from: KeyLogFormat.headerSize)
    precondition(parsed.validLength <= bytes.count, "parsed past the end")
    let rebuilt = parsed.keys.reduce(Array(bytes.prefix(KeyLogFormat.headerSize))) {
      $0 + KeyLogFormat.record($1)
    }
    precondition(rebuilt == Array(bytes.prefix(parsed.validLength)), "records do not round trip")
  }
  _ = KeyLogFormat.parseRecords(bytes, from: 0)
}
