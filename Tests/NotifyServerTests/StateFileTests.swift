import NotifyServerFiles
import Testing

struct StateFileTests {
  @Test func roundTripsEveryByteOfANameAndSortsByName() throws {
    let records = [
      StateRecord(name: "z.last", state: 1, setTimeNanoseconds: 2),
      StateRecord(name: "a b%c\nd\u{7F}é", state: .max, setTimeNanoseconds: 0),
      StateRecord(name: "group.example.count", state: 42, setTimeNanoseconds: 1_764_428_400),
    ]
    let bytes = StateFile.serialize(records)
    let body =
      "notifyd-state 2\na%20b%25c%0Ad%7Fé 18446744073709551615 0\n"
      + "group.example.count 42 1764428400\nz.last 1 2\n"
    #expect(
      String(decoding: bytes, as: UTF8.self)
        == body + "checksum \(StateFile.hex(StateFile.checksum(Array(body.utf8)[...])))\n")
    let parsed = try StateFile.parse(bytes, path: "/s")
    #expect(Set(parsed) == Set(records))
  }

  /// The example in Protocol/notifyd.md, checksum included, is what notifyd writes.
  @Test func theProtocolExampleIsAValidFile() throws {
    let text =
      "notifyd-state 2\ngroup.example.count 42 1764428400000000000\n"
      + "odd%20name%25 7 1764428400000000001\nchecksum 0745a6f2629deec5\n"
    let records = try StateFile.parse(Array(text.utf8), path: "/s")
    #expect(String(decoding: StateFile.serialize(records), as: UTF8.self) == text)
  }

  @Test func acceptsCommentsBlankLinesAndLowerCaseEscapes() throws {
    let text = "notifyd-state 1\n# a comment\n\nodd%2fname 7 9\n"
    let parsed = try StateFile.parse(Array(text.utf8), path: "/s")
    #expect(parsed == [StateRecord(name: "odd/name", state: 7, setTimeNanoseconds: 9)])
    #expect(try StateFile.parse(Array("notifyd-state 1\n".utf8), path: "/s").isEmpty)
  }

  /// Each malformed file fails with its code, on its line, with a message naming the file.
  @Test(arguments: [
    ("", NotifydFileError.Code.badHeader, 1),
    ("notifyd-state 3\n", .badHeader, 1),
    ("notifyd-state 2\n", .badChecksum, 1),
    ("notifyd-state 2\na 1 2\n", .badChecksum, 2),
    ("notifyd-state 2\nchecksum 0000000000000000\n", .badChecksum, 2),
    ("notifyd-state 2\nchecksum +00000000000000\n", .badChecksum, 2),
    ("notifyd-state 1\na 1\n", .badLine, 2),
    ("notifyd-state 1\na 1 2 3\n", .badLine, 2),
    ("notifyd-state 1\na  1 2\n", .badLine, 2),
    ("notifyd-state 1\na 1 2", .badLine, 2),
    ("notifyd-state 1\na -1 2\n", .badNumber, 2),
    ("notifyd-state 1\na 18446744073709551616 2\n", .badNumber, 2),
    ("notifyd-state 1\na 1 x\n", .badNumber, 2),
    ("notifyd-state 1\na%2 1 2\n", .badName, 2),
    ("notifyd-state 1\na%zz 1 2\n", .badName, 2),
    ("notifyd-state 1\n%00 1 2\n", .badName, 2),
    ("notifyd-state 1\n%ff 1 2\n", .badName, 2),
    ("notifyd-state 1\n" + String(repeating: "x", count: 512) + " 1 2\n", .badName, 2),
    ("notifyd-state 1\nok 1 2\n#\nok 3 4\n", .duplicate, 4),
    ("notifyd-state 1\n" + String(repeating: "y", count: 5000) + "\n", .tooLarge, 2),
  ])
  func malformedFilesNameTheLine(text: String, code: NotifydFileError.Code, line: Int) {
    let error = #expect(throws: NotifydFileError.self) {
      _ = try StateFile.parse(Array(text.utf8), path: "/var/state")
    }
    #expect(error?.code == code, "\(error?.message ?? "")")
    #expect(error?.line == line)
    #expect(error?.message.hasPrefix("/var/state:\(line): ") == true)
  }

  @Test func invalidUTF8InANameIsRefused() {
    let bytes = Array("notifyd-state 1\n".utf8) + [0xC3, 0x28] + Array(" 1 2\n".utf8)
    let error = #expect(throws: NotifydFileError.self) {
      _ = try StateFile.parse(bytes, path: "/s")
    }
    #expect(error?.code == .badName)
    #expect(error?.message == "/s:2: the name is not valid UTF-8")
  }
}
