// handoff-stress COUNT PREFIX [GROUP] [NOTIFICATION]: an extension process that sends COUNT
// shares, each with the URL https://example.com/PREFIX/<n> and a title, through
// HandoffSender (bus and container from NOTIFYBUS_BUS_ADDRESS and NOTIFYBUS_GROUPS_DIR).
// On failure it prints the error, and the container error it came from as
// `cause: CODE errno N`.
import AppGroups
import ExtensionItems
import Foundation
import Handoff

let arguments = CommandLine.arguments
guard arguments.count >= 3, let count = Int(arguments[1]) else {
  FileHandle.standardError.write(Data("usage: handoff-stress COUNT PREFIX [GROUP] [NAME]\n".utf8))
  exit(64)
}
let prefix = arguments[2]
let group = arguments.count > 3 ? arguments[3] : "group.example.readlater"
let name = arguments.count > 4 ? arguments[4] : "group.example.saved"
do {
  let sender = try await HandoffSender.connect(group: group, notification: name)
  for index in 0..<count {
    let url = URL(string: "https://example.com/\(prefix)/\(index)")!
    let item = ExtensionItem(
      attributedTitle: AttributedText("Article \(prefix) \(index)"),
      attachments: [ItemProvider(url: url), ItemProvider(text: "Shared by \(prefix).")])
    try await sender.send([item])
  }
  print("sent \(count)")
} catch {
  FileHandle.standardError.write(Data("handoff-stress: \(error)\n".utf8))
  // The lower error, for tests that check an app can tell failures apart.
  if case .container(let lower)? = error.cause {
    print("cause: \(lower.code) errno \(lower.cause?.errno ?? 0)")
  }
  exit(1)
}
