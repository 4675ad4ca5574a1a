import Activation
import DBus
import Testing

@Suite struct ApplicationIDTests {
  @Test func derivesTheObjectPathAndFileNames() throws {
    let id: ApplicationID = "org.example.Foo-Viewer"
    #expect(id.objectPath.rawValue == "/org/example/Foo_Viewer")
    #expect(id.busName.rawValue == "org.example.Foo-Viewer")
    #expect(id.desktopFileName == "org.example.Foo-Viewer.desktop")
    #expect(id.serviceFileName == "org.example.Foo-Viewer.service")
    #expect(
      ApplicationID(stringLiteral: "org.notifybus.ReadLater").objectPath.rawValue
        == "/org/notifybus/ReadLater")
  }

  @Test(arguments: ["org", ":1.7", "1org.example", "org..example", "org.example/x", ""])
  func refusesInvalidIDs(_ text: String) {
    #expect {
      try ApplicationID(text)
    } throws: { error in
      (error as? ActivationError)?.code == .invalidID
        && (error as? ActivationError)?.message.contains("is not an application id") == true
    }
  }
}

@Suite struct DesktopEntryTests {
  @Test func readsGroupsStringsListsAndBooleans() throws {
    let text = """
      # a comment
      [Desktop Entry]
      Type=Application
      Name = Read Later
      Name[de]=Später lesen
      Comment=Line one\\nline two\\sand\\ta\\\\b
      MimeType=x-scheme-handler/readlater;text/a\\;b;
      DBusActivatable=true
      Hidden=false

      [Desktop Action import]
      Name=Import
      """
    let entry = try DesktopEntry(parsing: Array(text.utf8), path: "/x.desktop")
    #expect(entry.groups.map(\.name) == ["Desktop Entry", "Desktop Action import"])
    #expect(try entry.string("Name") == "Read Later")
    #expect(try entry.string("Name[de]") == "Später lesen")
    #expect(try entry.string("Comment") == "Line one\nline two and\ta\\b")
    #expect(try entry.strings("MimeType") == ["x-scheme-handler/readlater", "text/a;b"])
    #expect(entry.mimeTypes == ["x-scheme-handler/readlater", "text/a;b"])
    #expect(entry.isDBusActivatable)
    #expect(!entry.isHidden)
    #expect(try entry.string("Name", in: "Desktop Action import") == "Import")
    #expect(try entry.string("Missing") == nil)
  }

  @Test(arguments: [
    ("Name=x\n[Desktop Entry]\n", "line 1 has the key Name before any group"),
    ("[Desktop Entry]\nName=a\nName=b\n", "line 3 repeats the key Name in [Desktop Entry]"),
    ("[A]\n[A]\n", "line 2 repeats the group [A]"),
    ("[Desktop Entry]\njust words\n", "line 2 is neither a group header"),
    ("[Desktop Entry\n", "line 1 has a group header without ']'"),
    ("[Desktop Entry]\nBad Key=1\n", "line 2 has an invalid key 'Bad Key'"),
    ("[Desktop Entry]\nName[=x\n", "line 2 has an invalid key 'Name['"),
    ("[Desktop Entry]\nName=a\u{0}b\n", "line 2 holds a NUL byte"),
  ])
  func refusesMalformedFiles(_ text: String, _ expected: String) {
    #expect {
      try DesktopEntry(parsing: Array(text.utf8), path: "/bad.desktop")
    } throws: { error in
      "\(error)".hasPrefix("/bad.desktop ") && "\(error)".contains(expected)
    }
  }

  @Test func refusesInvalidUTF8AndOversizedFiles() {
    #expect(throws: DesktopEntryError.self) {
      try DesktopEntry(parsing: [0x5B, 0x41, 0x5D, 0x0A, 0xFF, 0x3D, 0x31])
    }
    #expect {
      try DesktopEntry(parsing: [UInt8](repeating: 0x23, count: DesktopEntry.maximumSize + 1))
    } throws: { "\($0)".contains("the limit is") }
  }

  @Test func typedValuesOfTheWrongTypeAreErrors() throws {
    let entry = try DesktopEntry(
      parsing: Array("[Desktop Entry]\nDBusActivatable=yes\nExec=a\\".utf8))
    #expect { try entry.boolean("DBusActivatable") } throws: {
      "\($0)".contains("DBusActivatable=yes in [Desktop Entry], not true or false")
    }
    #expect(!entry.isDBusActivatable)
    #expect { try entry.string("Exec") } throws: { "\($0)".contains("lone '\\'") }
  }
}
