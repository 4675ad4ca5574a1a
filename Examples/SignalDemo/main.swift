// The NotifyBus signal demo: two connections on the bus NotifyBus picks by itself (the
// embedded bus when there is no session bus), one ringing, one listening.
//
//   swift run notifybus-demo [--bus session|system|embedded|ADDRESS] [--count N]
import DBus
import SystemSupport

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

var bus = Bus.automatic
var count = 5
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
  switch argument {
  case "--bus":
    guard let value = arguments.popFirst() else { usage("--bus needs a value") }
    do { bus = try Bus(parsing: value) } catch { usage(error.message) }
  case "--count":
    guard let value = arguments.popFirst().flatMap({ Int($0) }), value > 0 else {
      usage("--count needs a positive number")
    }
    count = value
  case "-h", "--help":
    print("USAGE: notifybus-demo [--bus <session|system|embedded|address>] [--count <n>]")
    exit(0)
  default:
    usage("unknown argument '\(argument)'")
  }
}

func usage(_ message: String) -> Never {
  fputs("Error: \(message)\nUsage: notifybus-demo [--bus <bus>] [--count <n>]\n", stderr)
  exit(64)
}

let interface: InterfaceName = "org.notifybus.Demo"
let path: ObjectPath = "/org/notifybus/Demo"

do {
  let app = try await BusConnection.connect(to: bus)
  let address = await app.address?.rawValue ?? "?"
  let which =
    address == EmbeddedBus.address.rawValue
    ? "the embedded bus (\(EmbeddedBus.socketPath))" : address
  print("app:       connected to \(which) as \(await app.uniqueName?.rawValue ?? "?")")

  let doorbell = try await app.signals(matching: .signal(interface: interface, member: "Ring"))
  print("app:       listening for \(interface).Ring")

  let extensionProcess = try await BusConnection.connect(to: bus)
  print("extension: connected as \(await extensionProcess.uniqueName?.rawValue ?? "?")")
  for number in 1...count {
    try extensionProcess.send(
      .signal(
        path: path, interface: interface, member: "Ring",
        body: [
          .string("group.example.saved"), .uint64(UInt64(number)),
          .int64(Int64(MonotonicClock.now)),
        ]))
  }
  print("extension: rang \(count) times")

  var heard = 0
  for await ring in doorbell {
    heard += 1
    let sent = ring.body.count > 2 ? ring.body[2].int64Value ?? 0 : 0
    let micros = Double(MonotonicClock.now - Int(sent)) / 1000
    let name = ring.body.first?.stringValue ?? "?"
    print(
      "app:       heard #\(heard) '\(name)' from \(ring.sender?.rawValue ?? "?") after \(Int(micros)) µs"
    )
    if heard == count { break }
  }
  await extensionProcess.close()
  await app.close()
  print("done: \(heard) of \(count) rings delivered")
} catch {
  fputs("Error: \(error)\n", stderr)
  exit(1)
}
