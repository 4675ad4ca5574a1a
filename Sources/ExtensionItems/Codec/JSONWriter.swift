/// Writes JSON text with sorted keys and two-space indentation, so the output is stable.
struct JSONWriter {
  private(set) var text = ""
  private var indent = 0

  /// A JSON value as the writer sees it.
  indirect enum Value {
    case string(String)
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    case array([Value])
    case object([(String, Value)])
  }

  mutating func write(_ value: Value) {
    switch value {
    case .string(let string): writeString(string)
    case .integer(let integer): text += String(integer)
    case .double(let double):
      let description = double.description
      text += description
      if !description.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) { text += ".0" }
    case .bool(let bool): text += bool ? "true" : "false"
    case .array(let elements):
      guard !elements.isEmpty else {
        text += "[]"
        return
      }
      text += "[\n"
      indent += 1
      for (index, element) in elements.enumerated() {
        newlineIndent()
        write(element)
        text += index == elements.count - 1 ? "\n" : ",\n"
      }
      indent -= 1
      newlineIndent()
      text += "]"
    case .object(let members):
      guard !members.isEmpty else {
        text += "{}"
        return
      }
      text += "{\n"
      indent += 1
      let sorted = members.sorted { $0.0 < $1.0 }
      for (index, member) in sorted.enumerated() {
        newlineIndent()
        writeString(member.0)
        text += ": "
        write(member.1)
        text += index == sorted.count - 1 ? "\n" : ",\n"
      }
      indent -= 1
      newlineIndent()
      text += "}"
    }
  }

  private mutating func newlineIndent() {
    text += String(repeating: "  ", count: indent)
  }

  private mutating func writeString(_ string: String) {
    text += "\""
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\"": text += "\\\""
      case "\\": text += "\\\\"
      case "\n": text += "\\n"
      case "\r": text += "\\r"
      case "\t": text += "\\t"
      default:
        if scalar.value < 0x20 {
          let hex = String(scalar.value, radix: 16)
          text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        } else {
          text.unicodeScalars.append(scalar)
        }
      }
    }
    text += "\""
  }
}
