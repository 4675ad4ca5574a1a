import Foundation

/// Maps the object graph of `JSONSerialization` back to items, naming the path of any error.
struct JSONItemReader {
  private func failure(_ path: String, _ message: String) -> ItemCodecError {
    ItemCodecError(.invalidJSON, "\(path): \(message)")
  }

  func items(_ object: Any) throws(ItemCodecError) -> [ExtensionItem] {
    guard let root = object as? [String: Any] else {
      throw failure("$", "expected an object")
    }
    guard root["format"] as? String == ItemCodec.jsonFormat else {
      throw failure("$.format", "expected \"\(ItemCodec.jsonFormat)\"")
    }
    guard let version = root["version"] as? Int, version == Int(ItemCodec.formatVersion)
    else {
      throw ItemCodecError(
        .unsupportedVersion, "$.version: expected \(ItemCodec.formatVersion)")
    }
    guard let items = root["items"] as? [Any] else {
      throw failure("$.items", "expected an array")
    }
    var result: [ExtensionItem] = []
    for (index, element) in items.enumerated() {
      result.append(try item(element, "$.items[\(index)]"))
    }
    return result
  }

  private func item(_ object: Any, _ path: String) throws(ItemCodecError) -> ExtensionItem {
    guard let fields = object as? [String: Any] else { throw failure(path, "expected an object") }
    var attachments: [ItemProvider] = []
    if let value = fields["attachments"] {
      guard let array = value as? [Any] else {
        throw failure("\(path).attachments", "expected an array")
      }
      for (index, element) in array.enumerated() {
        attachments.append(try provider(element, "\(path).attachments[\(index)]"))
      }
    }
    var userInfo: [String: PropertyListValue] = [:]
    if let value = fields["userInfo"] {
      guard case .dictionary(let entries) = try self.value(value, "\(path).userInfo") else {
        throw failure("\(path).userInfo", "expected an object")
      }
      userInfo = entries
    }
    for key in userInfo.keys where ExtensionItem.reservedUserInfoKeys.contains(key) {
      throw ItemCodecError(.invalidValue, "\(path).userInfo uses the reserved key \(key)")
    }
    var item = ExtensionItem(attachments: attachments, userInfo: userInfo)
    item.attributedTitle = try fields["title"].map { v throws(ItemCodecError) in
      try text(v, "\(path).title")
    }
    item.attributedContentText = try fields["contentText"].map { v throws(ItemCodecError) in
      try text(v, "\(path).contentText")
    }
    return item
  }

  private func base64(_ object: Any?, _ path: String) throws(ItemCodecError) -> Data {
    guard let string = object as? String, let data = Data(base64Encoded: string) else {
      throw failure(path, "expected base64 text")
    }
    return data
  }

  private func text(_ object: Any, _ path: String) throws(ItemCodecError) -> AttributedText {
    guard let fields = object as? [String: Any], let string = fields["string"] as? String else {
      throw failure(path, "expected an object with a \"string\"")
    }
    var text = AttributedText(string)
    if let rich = fields["rich"] {
      guard let richFields = rich as? [String: Any], let type = richFields["type"] as? String
      else {
        throw failure("\(path).rich", "expected an object with \"type\" and \"data\"")
      }
      text.richText = .init(
        type: UniformType(type), data: try base64(richFields["data"], "\(path).rich.data"))
    }
    return text
  }

  private func number(_ object: Any?, _ path: String) throws(ItemCodecError) -> Double {
    guard let number = object as? NSNumber, !(object is String) else {
      throw failure(path, "expected a number")
    }
    return number.doubleValue
  }

  private func provider(_ object: Any, _ path: String) throws(ItemCodecError) -> ItemProvider {
    guard let fields = object as? [String: Any] else { throw failure(path, "expected an object") }
    var provider = ItemProvider()
    if let name = fields["suggestedName"] {
      guard let name = name as? String else {
        throw failure("\(path).suggestedName", "expected a string")
      }
      provider.suggestedName = name
    }
    if let size = fields["preferredPresentationSize"] {
      guard let size = size as? [String: Any] else {
        throw failure("\(path).preferredPresentationSize", "expected an object")
      }
      provider.preferredPresentationSize = PresentationSize(
        width: try number(size["width"], "\(path).preferredPresentationSize.width"),
        height: try number(size["height"], "\(path).preferredPresentationSize.height"))
    }
    guard let representations = fields["representations"] as? [Any] else {
      throw failure("\(path).representations", "expected an array")
    }
    for (index, element) in representations.enumerated() {
      let here = "\(path).representations[\(index)]"
      guard let fields = element as? [String: Any], let type = fields["type"] as? String else {
        throw failure(here, "expected an object with a \"type\"")
      }
      var visibility = ItemRepresentation.Visibility.all
      if let raw = fields["visibility"] {
        guard let raw = raw as? NSNumber, let value = UInt32(exactly: raw.doubleValue) else {
          throw failure("\(here).visibility", "expected an unsigned integer")
        }
        visibility = .init(rawValue: value)
      }
      let content: ItemRepresentation.Content
      if let data = fields["data"] {
        content = .data(try base64(data, "\(here).data"))
      } else if let file = fields["file"] as? String {
        content = .file(path: file)
      } else if let text = fields["url"] as? String {
        switch ItemRepresentation.payloadURL(text) {
        case .success(let url): content = .url(url)
        case .failure(let problem): throw failure("\(here).url", problem.message)
        }
      } else if let text = fields["text"] as? String {
        content = .text(text)
      } else {
        throw failure(here, "expected one of \"data\", \"file\", \"url\" or \"text\"")
      }
      guard
        provider.register(
          ItemRepresentation(type: UniformType(type), visibility: visibility, content: content))
      else {
        throw ItemCodecError(.invalidValue, "\(here): \(type) is registered twice")
      }
    }
    return provider
  }

  private func value(_ object: Any, _ path: String) throws(ItemCodecError) -> PropertyListValue {
    switch object {
    case let string as String:
      return .string(string)
    case let array as [Any]:
      var elements: [PropertyListValue] = []
      for (index, element) in array.enumerated() {
        elements.append(try value(element, "\(path)[\(index)]"))
      }
      return .array(elements)
    case let dictionary as [String: Any]:
      if dictionary.count == 1, let (key, tagged) = dictionary.first {
        switch key {
        case "$data":
          return .data(try base64(tagged, "\(path).$data"))
        case "$date":
          let expected =
            "expected an RFC 3339 date-time in years 0001 to 9999, such as "
            + "2001-01-01T00:00:00.250Z"
          guard let text = tagged as? String else { throw failure("\(path).$date", expected) }
          guard let date = InternetDateTime.parse(text) else {
            let shown = text.count > 48 ? text.prefix(48) + "…" : Substring(text)
            throw failure("\(path).$date", "\(expected), not '\(shown)'")
          }
          return .date(date)
        case "$dictionary":
          guard let inner = tagged as? [String: Any] else {
            throw failure("\(path).$dictionary", "expected an object")
          }
          var entries: [String: PropertyListValue] = [:]
          for (key, element) in inner { entries[key] = try value(element, "\(path).\(key)") }
          return .dictionary(entries)
        default:
          break
        }
      }
      var entries: [String: PropertyListValue] = [:]
      for (key, element) in dictionary { entries[key] = try value(element, "\(path).\(key)") }
      return .dictionary(entries)
    default:
      guard let scalar = PropertyListValue(propertyListObject: object, maximumDepth: 0) else {
        throw failure(path, "expected a string, number, Boolean, array or object")
      }
      return scalar
    }
  }
}
