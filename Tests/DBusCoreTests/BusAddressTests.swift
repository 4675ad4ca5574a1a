import DBus
import TestSupport
import Testing

struct BusAddressTests {
  @Test func parsesEntriesAndUnescapes() throws {
    let address = try BusAddress("unix:path=/tmp/a%20b,guid=abc;tcp:host=localhost,port=1234")
    #expect(address.entries.count == 2)
    #expect(address.entries[0].transport == "unix")
    #expect(address.entries[0]["path"] == "/tmp/a b")
    #expect(address.entries[1]["port"] == "1234")
  }

  @Test func unixSocketAddressesEscapeTheirPath() throws {
    let address = BusAddress.unixSocket("/tmp/with space/bus")
    #expect(address.rawValue == "unix:path=/tmp/with%20space/bus")
    #expect(try BusAddress(address.rawValue).entries[0]["path"] == "/tmp/with space/bus")
  }

  @Test(arguments: [
    ("", "entry 1 is empty"),
    ("unix", "has no ':' after its transport"),
    (":path=/x", "has no transport"),
    ("carrier-pigeon:path=/x", "unknown transport 'carrier-pigeon'"),
    ("unix:path", "'path' in entry 1 is not key=value"),
    ("unix:=x", "a key in entry 1 is empty"),
    ("unix:path=/a,path=/b", "key 'path' is repeated"),
    ("unix:path=/a%zz", "bad %-escape"),
    ("unix:path=/a b", "must be escaped"),
    ("unix:guid=1", "exactly one of path, abstract"),
    ("unix:path=/a;;tcp:host=x", "entry 2 is empty"),
  ])
  func malformedAddressesAreRejectedWithTheReason(_ text: String, _ reason: String) {
    let error = #expect(throws: DBusError.self) { try BusAddress(text) }
    #expect(error?.name == .badAddress)
    #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
  }

  @Test func busChoicesParse() throws {
    #expect(try Bus(parsing: "session") == .session)
    #expect(try Bus(parsing: "embedded") == .embedded)
    #expect(try Bus(parsing: "unix:path=/x") == .address(BusAddress("unix:path=/x")))
    #expect(throws: DBusError.self) { try Bus(parsing: "sessoin") }
  }

  @Test func connectingToNothingFailsClearly() async throws {
    let error = await #expect(throws: DBusError.self) {
      _ = try await BusConnection.connect(
        to: .address(.unixSocket("/tmp/notifybus-no-such-dir/bus")))
    }
    #expect(
      error?.message.contains("cannot connect to unix:path=/tmp/notifybus-no-such-dir/bus") == true)
  }

  @Test func malformedEnvironmentAddressIsAnErrorNotAFallback() throws {
    let result = try Products.run(
      "dbus-test-peer", ["resolve"], environment: ["NOTIFYBUS_BUS_ADDRESS": "unix:nothing=1"])
    #expect(result.status == 1)
    #expect(result.error.contains("invalid D-Bus address 'unix:nothing=1'"), "\(result)")
  }
}
