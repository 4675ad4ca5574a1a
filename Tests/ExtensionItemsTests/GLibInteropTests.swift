import ExtensionItems
import Foundation
import TestSupport
import Testing

/// A reader and writer that are not ours: GLib's `GDBusMessage`, driven through python3-gi.
private let gioScript = #"""
  import base64, json, sys
  from gi.repository import Gio, GLib

  def plain(value):
      if isinstance(value, bytes):
          return {"$bytes": base64.b64encode(value).decode()}
      if isinstance(value, (list, tuple)):
          return [plain(element) for element in value]
      if isinstance(value, dict):
          return {key: plain(element) for key, element in value.items()}
      return value

  mode, path = sys.argv[1], sys.argv[2]
  if mode == "decode":
      blob = open(path, "rb").read()
      message = Gio.DBusMessage.new_from_blob(blob, Gio.DBusCapabilityFlags.NONE)
      body = message.get_body()
      print(json.dumps({
          "type": int(message.get_message_type()),
          "flags": int(message.get_flags()),
          "serial": message.get_serial(),
          "path": message.get_path(),
          "interface": message.get_interface(),
          "member": message.get_member(),
          "signature": message.get_signature(),
          "bodyType": body.get_type_string(),
          "body": plain(body.unpack()),
          "text": body.print_(True),
      }))
  else:
      signature, text, order = sys.argv[3], sys.argv[4], sys.argv[5]
      message = Gio.DBusMessage.new_signal(
          "/org/notifybus/Items1", "org.notifybus.Items1", "Items")
      message.set_body(GLib.Variant.parse(GLib.VariantType.new("(" + signature + ")"), text))
      message.set_serial(7)
      message.set_sender(":1.42")
      if order == "B":
          message.set_byte_order(Gio.DBusMessageByteOrder.BIG_ENDIAN)
      open(path, "wb").write(message.to_blob(Gio.DBusCapabilityFlags.NONE))
  """#

private let python = "/usr/bin/python3"

struct GLibInteropTests {
  private let temporary = TemporaryDirectory("glib-interop")
  private var file: URL { URL(filePath: temporary.path("message.bin")) }

  @Test func glibReadsWhatWeWrite() throws {
    try ItemCodec.encodeData(SampleItems.all).write(to: file)
    let result = try Products.runCommand(python, ["-c", gioScript, "decode", file.path])
    #expect(result.status == 0, "\(result.error)")
    let object = try JSONSerialization.jsonObject(with: Data(result.output.utf8))
    let decoded = try #require(object as? [String: Any])
    #expect(decoded["type"] as? Int == 4)
    #expect(decoded["serial"] as? Int == 1)
    #expect(decoded["flags"] as? Int == 1)
    #expect(decoded["path"] as? String == ItemCodec.objectPath)
    #expect(decoded["interface"] as? String == ItemCodec.interface)
    #expect(decoded["member"] as? String == ItemCodec.member)
    #expect(decoded["signature"] as? String == ItemCodec.bodySignature)
    #expect(decoded["bodyType"] as? String == "(" + ItemCodec.bodySignature + ")")
    let body = try #require(decoded["body"] as? [Any])
    #expect(body.count == 3)
    #expect(body[0] as? Int == 1)
    let items = try #require(body[1] as? [[Any]])
    #expect(items.count == SampleItems.all.count)

    // The web page: title, content text with its RTF form, one URL attachment, user info.
    let web = items[0]
    #expect((web[0] as? [[Any]])?.first?.first as? String == "Swift on Linux")
    let content = try #require((web[1] as? [[Any]])?.first)
    #expect(content[0] as? String == "Read later")
    let rich = try #require((content[1] as? [[Any]])?.first)
    #expect(rich[0] as? String == "public.rtf")
    #expect(rich[1] as? [Int] == Array("{\\rtf1 Read later}".utf8).map(Int.init))
    let attachment = try #require((web[2] as? [[Any]])?.first)
    #expect(attachment[0] as? [String] == ["Swift on Linux"])
    let representation = try #require((attachment[2] as? [[Any]])?.first)
    #expect(representation[0] as? String == "public.url")
    #expect(representation[1] as? Int == 3)
    #expect(representation[3] as? String == "https://www.swift.org/blog/swift-on-linux/")
    let info = try #require(web[3] as? [String: Any])
    #expect(info["supportsJavaScript"] as? Bool == true)
    #expect((info["savedAt"] as? [Double]) == [8e8])

    // The photo: presentation size, file reference, inline JPEG, nested user info.
    let photo = try #require((items[1][2] as? [[Any]])?.first)
    #expect(photo[1] as? [Double] == [4032, 3024])
    let photoRepresentations = try #require(photo[2] as? [[Any]])
    #expect(photoRepresentations[0][0] as? String == "public.heic")
    #expect(photoRepresentations[0][1] as? Int == 2)
    #expect(photoRepresentations[0][3] as? String == "attachments/IMG_0042.HEIC")
    #expect(photoRepresentations[1][2] as? Int == 3)
    let text = try #require(decoded["text"] as? String)
    #expect(text.contains("'exif': <{"))
    #expect(text.contains("<int64 100>"))
    #expect(text.contains("<1.8>"))
    #expect(
      text.contains("<@ay [0x00, 0x01, 0x02]>") || text.contains("<b''>")
        || text.contains("[byte 0x00"))
  }

  @Test(arguments: ["l", "B"])
  func weReadWhatGLibWrites(_ byteOrder: String) throws {
    func ay(_ text: String) -> String {
      "@ay [" + text.utf8.map { "byte \($0)" }.joined(separator: ", ") + "]"
    }
    let body = """
      (uint32 1,
       [([('Hello from GLib', @a(say) [])],
         [('Body', [('public.html', \(ay("<b>Body</b>")))])],
         [(['page.html'], (320.0, 200.5),
           [('public.html', byte 1, uint32 3, '', \(ay("<p>x</p>"))),
            ('public.url', byte 3, uint32 0, 'https://gnome.org/', @ay [])])],
         {'count': <int64 -3>, 'ratio': <0.25>, 'ok': <true>, 'when': <(12.5,)>,
          'list': <[<'a'>, <int64 2>]>, 'map': <{'k': <@ay [1, 2]>}>})],
       {'future': <(uint16 1, 'ignored')>})
      """
    let result = try Products.runCommand(
      python,
      ["-c", gioScript, "encode", file.path, ItemCodec.bodySignature, body, byteOrder])
    #expect(result.status == 0, "\(result.error)")
    let bytes = try Data(contentsOf: file)
    #expect(bytes.first == UInt8(ascii: byteOrder == "l" ? "l" : "B"))
    let items = try ItemCodec.decode(bytes)
    var provider = ItemProvider(
      representations: [
        ItemRepresentation(
          type: .html, visibility: .ownProcess, content: .data(Data("<p>x</p>".utf8))),
        ItemRepresentation(type: .url, content: .url(URL(string: "https://gnome.org/")!)),
      ], suggestedName: "page.html")
    provider.preferredPresentationSize = PresentationSize(width: 320, height: 200.5)
    let expected = ExtensionItem(
      attributedTitle: "Hello from GLib",
      attributedContentText: AttributedText(
        "Body", richText: .init(type: .html, data: Data("<b>Body</b>".utf8))),
      attachments: [provider],
      userInfo: [
        "count": -3, "ratio": 0.25, "ok": true,
        "when": .date(Date(timeIntervalSinceReferenceDate: 12.5)), "list": ["a", 2],
        "map": ["k": .data(Data([1, 2]))],
      ])
    #expect(items == [expected])
  }

  @Test func glibMessagesOfTheWrongShapeAreRejected() throws {
    let result = try Products.runCommand(
      python, ["-c", gioScript, "encode", file.path, "us", "(uint32 1, 'x')", "l"])
    #expect(result.status == 0, "\(result.error)")
    let bytes = try Data(contentsOf: file)
    do {
      _ = try ItemCodec.decode(bytes)
      Issue.record("decoded a message with the wrong body signature")
    } catch {
      #expect(error.code == .notAnItemMessage)
    }
  }
}
