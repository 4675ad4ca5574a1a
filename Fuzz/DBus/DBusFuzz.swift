// libFuzzer target for every parser of outside input in the DBus and Notify modules:
// names, signatures, match rules, bus addresses, marshalled messages (DBusCore's Swift
// reader, held to libdbus's), the bus's SASL answer, notification names and received
// `Posted` signals.
//
// The first byte picks the parser; the rest is the input.

import DBus
import DBusCore
import Notify

public func fuzz(_ bytes: [UInt8]) {
  guard let selector = bytes.first else { return }
  let input = Array(bytes.dropFirst())
  let text = String(decoding: input, as: UTF8.self)
  switch selector % 7 {
  case 0:
    _ = try? BusName(text)
    _ = try? InterfaceName(text)
    _ = try? MemberName(text)
    _ = try? ObjectPath(text)
    if let signature = try? Signature(text) {
      // Every valid signature splits into complete types that join back to it.
      precondition(signature.completeTypes.map(\.rawValue).joined() == text)
    }
  case 1:
    if let rule = try? MatchRule(parsing: text) {
      // A parsed rule renders to text that parses back to the same rule.
      precondition((try? MatchRule(parsing: rule.description)) == rule, "\(rule)")
    }
  case 2:
    _ = try? BusAddress(text)
    _ = try? Bus(parsing: text)
  case 5:
    // A notification name and its interface; a Posted signal built from bytes.
    if let name = try? NotifyName(text) {
      let interface = NotifyWire.interface(for: name)
      precondition(InterfaceName.isValid(interface.rawValue), "\(name) → \(interface)")
      precondition(
        NotifyWire.postedName(in: NotifyWire.signal(for: name, sequence: 1, nameSequence: 1))
          == name)
    }
    if let message = try? Message(marshalled: input), let name = NotifyWire.postedName(in: message)
    {
      precondition(NotifyWire.isPosted(message, name: name))
    }
  case 6:
    // The bus's answer to AUTH EXTERNAL: accepted only as one whole OK line.
    if case .accepted(let guid, let consumed) = try? ExternalAuthentication.answer(in: input[...]) {
      precondition(guid.utf8.count == 32 && consumed <= input.count && input[consumed - 1] == 10)
    }
  default:
    let swift = try? Message(marshalled: input)
    let libdbus = try? Message(libdbusDemarshalling: input)
    if let swift {
      // What the Swift reader accepts, it writes back byte for byte as libdbus does, and
      // both read that back as the same message.
      let again = try? swift.marshalled()
      precondition(again != nil && again == (try? swift.libdbusMarshalled()), "\(swift)")
      precondition((try? Message(marshalled: again!)) == swift)
      precondition((try? Message(libdbusDemarshalling: again!)) == swift)
      // What a connection hands libdbus to send is those bytes too, its serial kept.
      precondition((try? swift.builtForSending()).map { $0.bytes == again! } == true, "\(swift)")
      // Where libdbus reads the original too, it reads the same message. (libdbus refuses
      // some header fields the specification says to ignore, such as code 10 when it is not
      // an object path.)
      if let libdbus { precondition(libdbus == swift, "libdbus read \(libdbus), Swift \(swift)") }
    } else if let libdbus, (1...4).contains(input[1]) {
      // Message types beyond 4 are to be ignored, and Swift refuses to read them. Otherwise
      // the only messages libdbus reads and Swift refuses carry file descriptors.
      precondition(input.contains(UInt8(ascii: "h")), "Swift refused what libdbus read: \(libdbus)")
    }
  }
}
