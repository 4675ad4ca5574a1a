// A second process for DBus tests. Modes:
//   resolve                       connect as `Bus.automatic` resolves it; print "<bus id> <address>"
//   emit <address> <count> <tag>  send <count> `org.notifybus.Test.Tick` signals (arg0 tag, arg1 seq)
import DBus

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

func fail(_ text: String) -> Never {
  fputs("dbus-test-peer: \(text)\n", stderr)
  exit(1)
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
  switch arguments.first {
  case "resolve":
    let connection = try await BusConnection.connect()
    let id = try await connection.busID()
    print("\(id) \(await connection.address?.rawValue ?? "")")
    await connection.close()
  case "emit" where arguments.count == 4:
    let connection = try await BusConnection.connect(to: .address(try BusAddress(arguments[1])))
    guard let count = Int(arguments[2]) else { fail("bad count") }
    for sequence in 0..<count {
      try connection.send(
        .signal(
          path: "/org/notifybus/Test", interface: "org.notifybus.Test", member: "Tick",
          body: [.string(arguments[3]), .uint64(UInt64(sequence))]))
    }
    try await connection.flush()
    await connection.close()
  default:
    fail("usage: dbus-test-peer resolve | emit <address> <count> <tag>")
  }
} catch {
  fail("\(error)")
}
