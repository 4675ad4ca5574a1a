// A second process for DBus tests. Modes:
//   resolve                       connect as `Bus.automatic` resolves it; print "<bus id> <address>"
//   emit <address> <count> <tag>  send <count> `org.notifybus.Test.Tick` signals (arg0 tag, arg1 seq)
//   release-as-bus-dies <address> <bus pid>
//                                 drop a connection's last reference while its loop dispatches,
//                                 with the bus (killed meanwhile) Disconnected queued behind;
//                                 print "released" and exit 0 if nothing crashed
import DBus
import Dispatch
import Synchronization

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
  case "release-as-bus-dies" where arguments.count == 3:
    // The connection's last reference goes while its loop dispatches a signal that the
    // bus's `Disconnected` follows in the same pass.
    let address = try BusAddress(arguments[1])
    guard let pid = pid_t(arguments[2]) else { fail("bad pid") }
    let held = Mutex<BusConnection?>(try await BusConnection.connect(to: .address(address)))
    let blocked = DispatchSemaphore(value: 0)
    let unblock = DispatchSemaphore(value: 0)
    let rule = MatchRule.signal(interface: "org.notifybus.Test", member: "Tick")
    _ = try await held.withLock { $0! }.subscribe(rule) { message in
      if message.body.first == "hold" {
        // Keep the loop away from the socket until the bus is dead, so that the next
        // read finds the last signal and the end of the stream together.
        blocked.signal()
        unblock.wait()
      } else {
        held.withLock { $0 = nil }
      }
    }
    let emitter = try await BusConnection.connect(to: .address(address))
    for tag in ["hold", "release"] {
      try emitter.send(
        .signal(
          path: "/org/notifybus/Test", interface: "org.notifybus.Test", member: "Tick",
          body: [.string(tag), .uint64(0)]))
      try await emitter.flush()
      if tag == "hold" { blocked.wait() }
    }
    kill(pid, SIGKILL)
    usleep(50_000)
    unblock.signal()
    usleep(200_000)
    print("released")
  default:
    fail(
      "usage: dbus-test-peer resolve | emit <address> <count> <tag> "
        + "| release-as-bus-dies <address> <bus pid>")
  }
} catch {
  fail("\(error)")
}
