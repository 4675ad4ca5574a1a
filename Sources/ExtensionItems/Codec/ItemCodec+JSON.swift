public import Foundation

extension ItemCodec {
  /// The `format` member of the JSON mapping.
  public static let jsonFormat = "org.notifybus.items"

  /// Writes items as JSON for people and for `--json` output (`Protocol/item-codec.md`, "JSON
  /// mapping"): keys sorted, two-space indentation, bytes in base64, dates in ISO 8601 with
  /// millisecond precision.
  ///
  /// - Throws: ``ItemCodecError`` when a limit is exceeded, a string contains NUL, or a real
  ///   number is not finite (JSON cannot carry NaN or infinity).
  public static func encodeJSON(_ items: [ExtensionItem], limits: ItemCodecLimits = .default)
    throws(ItemCodecError) -> Data
  {
    _ = try encode(items, limits: limits)
    var writer = JSONWriter()
    writer.write(
      .object([
        ("format", .string(jsonFormat)), ("version", .integer(Int64(formatVersion))),
        ("items", .array(try items.map(jsonItem))),
      ]))
    return Data((writer.text + "\n").utf8)
  }

  /// Reads items from the JSON mapping, enforcing the same limits as the binary decoder.
  public static func decodeJSON(_ data: Data, limits: ItemCodecLimits = .default)
    throws(ItemCodecError) -> [ExtensionItem]
  {
    guard data.count <= limits.maximumMessageSize * 2 else {
      throw ItemCodecError(
        .messageTooLarge,
        "the JSON text is \(data.count) bytes; at most "
          + "\(limits.maximumMessageSize * 2) are accepted (twice maximumMessageSize)")
    }
    let object: Any
    do {
      object = try JSONSerialization.jsonObject(with: data)
    } catch {
      throw ItemCodecError(.invalidJSON, "not JSON: \(error)")
    }
    let reader = JSONItemReader()
    let items = try reader.items(object)
    _ = try encode(items, limits: limits)
    return items
  }

  private static func jsonText(_ text: AttributedText) -> JSONWriter.Value {
    var members: [(String, JSONWriter.Value)] = [("string", .string(text.string))]
    if let rich = text.richText {
      members.append(
        (
          "rich",
          .object([
            ("type", .string(rich.type.identifier)),
            ("data", .string(rich.data.base64EncodedString())),
          ])
        ))
    }
    return .object(members)
  }

  private static func jsonItem(_ item: ExtensionItem) throws(ItemCodecError) -> JSONWriter.Value {
    var members: [(String, JSONWriter.Value)] = []
    if let title = item.attributedTitle { members.append(("title", jsonText(title))) }
    if let text = item.attributedContentText { members.append(("contentText", jsonText(text))) }
    var attachments: [JSONWriter.Value] = []
    for provider in item.attachments { attachments.append(try jsonProvider(provider)) }
    members.append(("attachments", .array(attachments)))
    members.append(("userInfo", try jsonDictionary(item.customUserInfo)))
    return .object(members)
  }

  private static func jsonProvider(_ provider: ItemProvider) throws(ItemCodecError)
    -> JSONWriter.Value
  {
    if let lazy = provider.lazyRepresentations.first { throw ItemCodecError.notLoaded(lazy) }
    var members: [(String, JSONWriter.Value)] = []
    if let name = provider.suggestedName { members.append(("suggestedName", .string(name))) }
    let size = provider.preferredPresentationSize
    if size.isKnown {
      members.append(
        (
          "preferredPresentationSize",
          .object([("width", try jsonDouble(size.width)), ("height", try jsonDouble(size.height))])
        ))
    }
    members.append(
      (
        "representations",
        .array(
          provider.representations.map { representation in
            var fields: [(String, JSONWriter.Value)] = [
              ("type", .string(representation.type.identifier))
            ]
            if representation.visibility != .all {
              fields.append(("visibility", .integer(Int64(representation.visibility.rawValue))))
            }
            switch representation.content {
            case .data(let data): fields.append(("data", .string(data.base64EncodedString())))
            case .file(let path): fields.append(("file", .string(path)))
            case .url(let url): fields.append(("url", .string(url.absoluteString)))
            case .text(let text): fields.append(("text", .string(text)))
            }
            return .object(fields)
          })
      ))
    return .object(members)
  }

  private static func jsonDouble(_ value: Double) throws(ItemCodecError) -> JSONWriter.Value {
    guard value.isFinite else {
      throw ItemCodecError(.invalidValue, "JSON cannot carry the real number \(value)")
    }
    return .double(value)
  }

  static let tagKeys: Set<String> = ["$data", "$date", "$dictionary"]

  private static func jsonDictionary(_ entries: [String: PropertyListValue])
    throws(ItemCodecError) -> JSONWriter.Value
  {
    var members: [(String, JSONWriter.Value)] = []
    for (key, value) in entries { members.append((key, try jsonValue(value))) }
    if entries.count == 1, let key = entries.keys.first, tagKeys.contains(key) {
      return .object([("$dictionary", .object(members))])
    }
    return .object(members)
  }

  private static func jsonValue(_ value: PropertyListValue) throws(ItemCodecError)
    -> JSONWriter.Value
  {
    switch value {
    case .string(let string): return .string(string)
    case .integer(let integer): return .integer(integer)
    case .double(let double): return try jsonDouble(double)
    case .bool(let bool): return .bool(bool)
    case .data(let data): return .object([("$data", .string(data.base64EncodedString()))])
    case .date(let date):
      guard let text = InternetDateTime.format(date) else {
        throw ItemCodecError(
          .invalidValue,
          "JSON carries dates in years 0001 to 9999, not \(date.timeIntervalSince1970) s since 1970"
        )
      }
      return .object([("$date", .string(text))])
    case .array(let elements):
      var values: [JSONWriter.Value] = []
      for element in elements { values.append(try jsonValue(element)) }
      return .array(values)
    case .dictionary(let entries):
      return try jsonDictionary(entries)
    }
  }
}
