// The NotifyBus signal demo: two connections on the bus NotifyBus picks by itself (the
// embedded bus when there is no session bus), one ringing, one listening.
//
//   swift run notifybus-demo [--bus session|system|embedded|ADDRESS] [--count N]
import CommandLineSupport
import DBus
import NotifyToolsCore
import SystemSupport

let command = CommandDescription(
  name: "notifybus-demo",
  abstract: "Ring a doorbell signal between two connections and hear it.",
  discussion: """
    Connects twice to the bus (the embedded bus when there is no session bus), listens for \
    org.notifybus.Demo.Ring on one connection and sends it from the other, then prints how \
    long each ring took.
    """,
  version: notifyBusVersion,
  options: [
    .bus,
    OptionDescription.count("--count", abstract: "How many times to ring (at least 1).").with {
      $0.defaultValue = "5"
    },
  ])

let interface: InterfaceName = "org.notifybus.Demo"
let path: ObjectPath = "/org/notifybus/Demo"

await CommandRunner(command).asyncMain { arguments in
  let bus = try arguments.bus() ?? .automatic
  let count = try arguments.value("--count", as: Count.self)?.value ?? 5
  let app = try await BusConnection.connect(to: bus)
  let address = await app.address?.rawValue ?? "?"
  let which =
    address == EmbeddedBus.address.rawValue
    ? "the embedded bus (\(EmbeddedBus.socketPath))" : address
  try StandardOutput.writeLine(
    "app:       connected to \(which) as \(await app.uniqueName?.rawValue ?? "?")")

  let doorbell = try await app.signals(matching: .signal(interface: interface, member: "Ring"))
  try StandardOutput.writeLine("app:       listening for \(interface).Ring")

  let extensionProcess = try await BusConnection.connect(to: bus)
  try StandardOutput.writeLine(
    "extension: connected as \(await extensionProcess.uniqueName?.rawValue ?? "?")")
  for number in 1...count {
    try extensionProcess.send(
      .signal(
        path: path, interface: interface, member: "Ring",
        body: [
          .string("group.example.saved"), .uint64(UInt64(number)),
          .int64(Int64(MonotonicClock.now)),
        ]))
  }
  try StandardOutput.writeLine("extension: rang \(count) times")

  var heard = 0
  for await ring in doorbell {
    heard += 1
    let sent = ring.body.count > 2 ? ring.body[2].int64Value ?? 0 : 0
    let micros = Double(MonotonicClock.now - Int(sent)) / 1000
    let name = ring.body.first?.stringValue ?? "?"
    try StandardOutput.writeLine(
      "app:       heard #\(heard) '\(name)' from \(ring.sender?.rawValue ?? "?") after \(Int(micros)) µs"
    )
    if heard == count { break }
  }
  await extensionProcess.close()
  await app.close()
  try StandardOutput.writeLine("done: \(heard) of \(count) rings delivered")
}
