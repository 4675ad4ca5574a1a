import DBusCore
import NotifyCore
import Testing

struct NotifyNameTests {
  @Test(arguments: [
    ("", "it is empty"),
    (String(repeating: "a", count: 512), "it is 512 bytes long; the limit is 511"),
    ("a\u{0}b", "it contains a NUL character"),
  ])
  func invalidNamesSayWhy(_ name: String, _ reason: String) {
    let error = #expect(throws: NotifyError.self) { try NotifyName(name) }
    #expect(error?.status == .invalidName)
    #expect(error?.message.hasSuffix(reason) == true, "\(error?.message ?? "")")
  }

  @Test func longestNameIsAccepted() throws {
    #expect(try NotifyName(String(repeating: "a", count: 511)).rawValue.utf8.count == 511)
  }

  @Test func processLocalAndUserNamespaces() {
    #expect(NotifyName("self.cache").isProcessLocal)
    #expect(!NotifyName("selfish.x").isProcessLocal)
    #expect(NotifyName("user.uid.50").reservedUserID == 50)
    #expect(NotifyName("user.uid.50.x").reservedUserID == 50)
    #expect(NotifyName("user.uid.50x").reservedUserID == nil)
    #expect(NotifyName("user.uid.").reservedUserID == nil)
    // Only Darwin's spelling of a uid names it: no leading zero, no sign, fits 32 bits.
    #expect(NotifyName("user.uid.0").reservedUserID == 0)
    #expect(NotifyName("user.uid.00.x").reservedUserID == nil)
    #expect(NotifyName("user.uid.05").reservedUserID == nil)
    #expect(NotifyName("user.uid.4294967296").reservedUserID == nil)
  }

  @Test func namespaces() {
    let name: NotifyName = "group.example.saved"
    #expect(name.isInside(namespace: "group.example"))
    #expect(name.isInside(namespace: "group.example.saved"))
    #expect(!name.isInside(namespace: "group.ex"))
  }
}

struct NotifyWireTests {
  @Test func documentedExample() {
    #expect(
      NotifyWire.interface(for: "group.example.saved").rawValue
        == "org.notifybus.Notify1.N.group.example.saved")
  }

  @Test(arguments: [
    ("com.apple.system.timezone", "org.notifybus.Notify1.N.com.apple.system.timezone"),
    ("a_b.c-d", "org.notifybus.Notify1.N.a_5fb.c_2dd"),
    ("9lives.x", "org.notifybus.Notify1.N._39lives.x"),
    ("a..b.", "org.notifybus.Notify1.N.a._.b._"),
    ("grüße", "org.notifybus.Notify1.N.gr_c3_bc_c3_9fe"),
    ("self", "org.notifybus.Notify1.N.self"),
  ])
  func escaping(_ name: String, _ interface: String) throws {
    #expect(NotifyWire.interface(for: try NotifyName(name)).rawValue == interface)
  }

  @Test func everyNameGivesAValidInterface() throws {
    let names = [
      ".", "..", "a", "é", "\u{1F600}", String(repeating: "x.", count: 200), " ", "_", "-",
      String(repeating: "é", count: 255), "a b", "1", "1.2.3",
    ]
    for text in names {
      let interface = NotifyWire.interface(for: try NotifyName(text))
      #expect(InterfaceName.isValid(interface.rawValue), "\(text) → \(interface)")
      #expect(interface.rawValue.utf8.count <= 255)
    }
  }

  @Test func longNamesAreHashed() throws {
    let long = try NotifyName(String(repeating: "é", count: 200))
    let interface = NotifyWire.interface(for: long).rawValue
    #expect(interface.hasPrefix("org.notifybus.Notify1.H.h"))
    #expect(interface.utf8.count == "org.notifybus.Notify1.H.h".utf8.count + 32)
    let other = try NotifyName(String(repeating: "é", count: 199) + "e")
    #expect(NotifyWire.interface(for: other) != NotifyWire.interface(for: long))
  }

  /// The receiver's in-place check agrees with comparing the built interface, for every
  /// escaping case and for interfaces one byte off (changed, missing, extra).
  @Test func isInterfaceAgreesWithTheBuiltInterface() throws {
    let names = [
      "group.example.saved", "a_b.c-d", "9lives.x", "a..b.", ".", "..", "a", "grüße", "1.2.3",
      "x.9", "a b", "\u{1F600}", String(repeating: "x.", count: 100),
      String(repeating: "é", count: 200),
    ]
    for text in names {
      let name = try NotifyName(text)
      let built = NotifyWire.interface(for: name)
      #expect(NotifyWire.isInterface(built, of: name), "\(text)")
      let bytes = Array(built.rawValue.utf8)
      var nearMisses = [Array(bytes.dropLast()), bytes + [UInt8(ascii: "a")]]
      for index in stride(from: 24, to: bytes.count, by: 3) {
        var changed = bytes
        changed[index] = changed[index] == UInt8(ascii: "a") ? UInt8(ascii: "b") : UInt8(ascii: "a")
        nearMisses.append(changed)
      }
      for miss in nearMisses {
        let other = InterfaceName(unchecked: String(decoding: miss, as: UTF8.self))
        #expect(!NotifyWire.isInterface(other, of: name), "\(text) vs \(other)")
      }
      for otherText in names where otherText != text {
        #expect(!NotifyWire.isInterface(built, of: try NotifyName(otherText)), "\(text)")
      }
    }
  }

  /// The first argument must be the name's bytes: a canonically equivalent spelling (`==`
  /// on `String` would accept it) is another name.
  @Test func isPostedComparesTheNamesBytes() {
    let composed: NotifyName = "caf\u{E9}.saved"
    let decomposed = "cafe\u{301}.saved"
    let interface = NotifyWire.interface(for: composed)
    func signal(_ text: String) -> Message {
      .signal(
        path: NotifyWire.path, interface: interface, member: "Posted",
        body: [.string(text), .uint64(1), .uint64(1)])
    }
    #expect(NotifyWire.isPosted(signal(composed.rawValue), name: composed))
    #expect(!NotifyWire.isPosted(signal(decomposed), name: composed))
    #expect(!NotifyWire.isPosted(signal("caf\u{E9}.save"), name: composed))
  }

  @Test func postedNameAcceptsTheMinimalSignalAndRejectsMismatches() {
    let name: NotifyName = "group.example.saved"
    let interface = NotifyWire.interface(for: name)
    func signal(_ interface: InterfaceName, _ body: [DBusValue]) -> Message {
      .signal(path: NotifyWire.path, interface: interface, member: "Posted", body: body)
    }
    #expect(NotifyWire.postedName(in: signal(interface, [.string(name.rawValue)])) == name)
    #expect(
      NotifyWire.postedName(in: signal(interface, [.string(name.rawValue), .uint64(3)])) == name)
    #expect(NotifyWire.postedName(in: signal(interface, [])) == nil)
    #expect(NotifyWire.postedName(in: signal(interface, [.uint32(1)])) == nil)
    #expect(NotifyWire.postedName(in: signal(interface, [.string("other.name")])) == nil)
    #expect(
      NotifyWire.postedName(in: signal(interface, [.string(name.rawValue), .string("x")])) == nil)
  }
}
