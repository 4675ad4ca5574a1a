import DBusCore
import Testing

struct NameTests {
  @Test(arguments: [
    "org.freedesktop.DBus", "org.example.has-dash", ":1.7", ":1.42.x", "a.b", "_a.b9",
  ])
  func validBusNames(_ name: String) throws {
    #expect(try BusName(name).rawValue == name)
  }

  @Test(arguments: [
    ("", "must not be empty"),
    ("org", "needs at least 2 elements"),
    ("1org.example", "element 1 starts with a digit"),
    ("org..example", "element 2 is empty"),
    (".org.example", "element 1 is empty"),
    ("org.example.", "element 3 is empty"),
    ("org.example/x", "character '/' is not allowed in element 2"),
    (String(repeating: "a.", count: 128) + "b", "257 bytes long; the limit is 255"),
  ])
  func invalidBusNamesNameTheRuleBroken(_ name: String, _ rule: String) {
    let error = #expect(throws: DBusError.self) { try BusName(name) }
    #expect(error?.name == .invalidArgs)
    #expect(error?.message.contains(rule) == true, "\(error?.message ?? "")")
    #expect(error?.message.contains("bus name") == true)
  }

  @Test(arguments: [
    ("org", false), ("org.example", true), ("org.9x", false), ("org.a-b", false), ("a._b", true),
    ("org.example.Notify1.N.group_2e", true),
  ])
  func interfaceNames(_ name: String, _ valid: Bool) {
    #expect(InterfaceName.isValid(name) == valid)
  }

  @Test(arguments: [
    ("Posted", true), ("get_state", true), ("_x1", true), ("", false), ("1st", false),
    ("a.b", false), ("a-b", false), (String(repeating: "m", count: 256), false),
  ])
  func memberNames(_ name: String, _ valid: Bool) {
    #expect(MemberName.isValid(name) == valid)
  }

  @Test(arguments: [
    ("/", true), ("/org/notifybus/Notify1", true), ("/a_b/c9", true), ("", false), ("org", false),
    ("/org/", false), ("/org//x", false), ("/org/a-b", false),
  ])
  func objectPaths(_ path: String, _ valid: Bool) {
    #expect(ObjectPath.isValid(path) == valid)
  }

  @Test func objectPathErrorsSayWhere() {
    let text = "/org//x"  // a literal would be checked at compile time and trap instead
    let error = #expect(throws: DBusError.self) { try ObjectPath(text) }
    #expect(error?.message == "invalid object path '/org//x': element 2 is empty")
  }

  @Test(arguments: [
    ("", true), ("s", true), ("sat", true), ("a{sv}", true), ("(ia(ss))", true), ("aay", true),
    ("z", false), ("a", false), ("()", false), ("{sv}", false), ("a{vs}", false), ("((", false),
    ("a{s}", false), ("a{svs}", false), ("(s", false),
    (String(repeating: "a", count: 33) + "s", false),
    (String(repeating: "a", count: 32) + "s", true),
    (String(repeating: "(", count: 33) + "s" + String(repeating: ")", count: 33), false),
    (String(repeating: "s", count: 256), false),
  ])
  func signatures(_ signature: String, _ valid: Bool) {
    #expect(Signature.isValid(signature) == valid, "\(signature)")
  }

  @Test func signatureSplitsIntoCompleteTypes() {
    let signature: Signature = "sa{sv}(ii)t"
    #expect(signature.completeTypes == ["s", "a{sv}", "(ii)", "t"])
    #expect(Signature("a{sv}").isSingleCompleteType)
    #expect(!Signature("ss").isSingleCompleteType)
  }

  @Test func signatureErrorsSayWhatWasExpected() {
    let text = "a{vs}"
    let error = #expect(throws: DBusError.self) { try Signature(text) }
    #expect(
      error?.message == "invalid signature 'a{vs}': dict entry at offset 1 needs a basic key type")
  }
}
