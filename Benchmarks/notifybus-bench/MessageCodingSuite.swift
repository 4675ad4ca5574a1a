import CDBus
import DBus

/// How `BusConnection` turns ``Message`` values into libdbus messages and back, against the
/// other way of doing each.
///
/// Rows per workload, messages per second, a ratio above 1 meaning the subject is faster:
/// building a libdbus message from a ``Message`` (what `BusConnection` does: the Swift
/// marshaller and one `dbus_message_demarshal`, against libdbus's setters and iterators,
/// one call per value, as C code builds it), and reading one back into a ``Message``
/// (the Swift codec after one `dbus_message_marshal`, against libdbus's getters and
/// iterators, what `BusConnection` does).
enum MessageCodingSuite: BenchmarkSuite {
  static let name = "message"

  static func run(scale: Double) async throws -> [BenchmarkRow] {
    var rows: [BenchmarkRow] = []
    for (name, message) in workloads { rows += try measure(name, message, scale: scale) }
    return rows
  }

  private static let workloads: [(String, Message)] = [
    (
      "Posted signal",
      Message.signal(
        path: "/org/notifybus/Notify1", interface: "org.notifybus.Notify1.N.group.example.saved",
        member: "Posted", body: [.string("group.example.saved"), .uint64(42), .uint64(7)])
    ),
    (
      "reply with a{sv} of 16",
      Message(
        kind: .methodReturn, destination: ":1.7", sender: "org.example.Service", replySerial: 9,
        body: [
          .dictionary(
            Dictionary(
              uniqueKeysWithValues: (0..<16).map { index -> (String, DBusValue) in
                let value: DBusValue =
                  switch index % 3 {
                  case 0: .string("value number \(index)")
                  case 1: .uint32(UInt32(index))
                  default: .array(elementType: "s", [.string("a"), .string("b\(index)")])
                  }
                return ("key\(index)", value)
              }))
        ])
    ),
  ]

  private static func measure(_ name: String, _ original: Message, scale: Double) throws
    -> [BenchmarkRow]
  {
    var message = original
    message.serial = 5
    let received = try MessageCoding.makeRaw(message)
    defer { dbus_message_unref(received) }
    let read = try viaCodec(received)
    precondition(read == MessageCoding.decode(received), "both paths must read alike")
    let built = try MessageCoding.makeRawThroughIterators(message)
    precondition(
      MessageCoding.decode(built) == message && MessageCoding.decode(received) == message,
      "both paths must build alike")
    dbus_message_unref(built)

    let seconds = max(0.05, 0.5 * scale)
    let buildIterators = try rate(seconds: seconds) {
      let raw = try MessageCoding.makeRawThroughIterators(message)
      defer { dbus_message_unref(raw) }
      return Int(dbus_message_get_serial(raw))
    }
    let buildCodec = try rate(seconds: seconds) {
      let raw = try MessageCoding.makeRaw(message)
      defer { dbus_message_unref(raw) }
      return Int(dbus_message_get_serial(raw))
    }
    let readIterators = try rate(seconds: seconds) {
      MessageCoding.decode(received).body.count
    }
    let readCodec = try rate(seconds: seconds) { try viaCodec(received).body.count }
    return [
      BenchmarkRow(
        name: "libdbus message from Message, \(name)", unit: "msgs/s", subject: buildCodec,
        baselineName: "libdbus iterators", baseline: buildIterators, higherIsBetter: true,
        target: nil),
      BenchmarkRow(
        name: "Message from libdbus message, \(name)", unit: "msgs/s", subject: readCodec,
        baselineName: "libdbus iterators", baseline: readIterators, higherIsBetter: true,
        target: nil),
    ]
  }

  /// libdbus's bytes for a message, read by the Swift codec.
  private static func viaCodec(_ raw: OpaquePointer) throws(DBus.DBusError) -> Message {
    try Message(marshalled: try MessageCoding.marshal(raw))
  }
}
