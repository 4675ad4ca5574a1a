import AppGroups
import Foundation
import Glibc
import TestSupport
import TestTraits
import Testing

@Suite(.blocking)
struct SharedDefaultsTests {
  @Test func roundTripsEveryTypedValue() throws {
    let temporary = TemporaryDirectory()
    let defaults = try SharedDefaults(container: temporary.container())
    let date = Date(timeIntervalSince1970: 1_700_000_000.25)
    try defaults.set("text", forKey: "string")
    try defaults.set(-42, forKey: "int")
    try defaults.set(2.5, forKey: "double")
    try defaults.set(true, forKey: "bool")
    try defaults.set(Data([0, 1, 255]), forKey: "data")
    try defaults.set(date, forKey: "date")
    try defaults.set(URL(string: "https://example.com/a?b=c")!, forKey: "url")
    try defaults.set(["a", 1, false] as [PropertyListValue], forKey: "array")
    try defaults.set(["k": "v", "n": ["x": 1]] as [String: PropertyListValue], forKey: "dict")

    // A second instance reads the file afresh, as another process would.
    let reader = try SharedDefaults(container: temporary.container())
    #expect(try reader.string(forKey: "string") == "text")
    #expect(try reader.integer(forKey: "int") == -42)
    #expect(try reader.double(forKey: "double") == 2.5)
    #expect(try reader.bool(forKey: "bool"))
    #expect(try reader.object(forKey: "bool") == .bool(true))
    #expect(try reader.object(forKey: "int") == .integer(-42))
    #expect(try reader.data(forKey: "data") == Data([0, 1, 255]))
    #expect(try reader.date(forKey: "date") == date)
    #expect(try reader.url(forKey: "url") == URL(string: "https://example.com/a?b=c"))
    #expect(try reader.array(forKey: "array") == ["a", 1, false])
    #expect(try reader.dictionary(forKey: "dict") == ["k": "v", "n": ["x": 1]])
    #expect(try reader.dictionaryRepresentation().count == 9)
    #expect(try reader.string(forKey: "missing") == nil)
    #expect(try reader.integer(forKey: "missing") == 0)
  }

  /// A date that is not finite cannot be written, and trying leaves the file readable.
  @Test func anInfiniteDateIsRefusedAndTheFileStaysReadable() throws {
    let temporary = TemporaryDirectory()
    let defaults = try SharedDefaults(container: temporary.container())
    try defaults.set("kept", forKey: "before")
    let error = #expect(throws: ContainerError.self) {
      try defaults.set(Date(timeIntervalSinceReferenceDate: .infinity), forKey: "when")
    }
    #expect(error?.code == .unsupportedValue)
    #expect(error?.message.contains("cannot be written") == true, "\(String(describing: error))")
    let reader = try SharedDefaults(container: temporary.container())
    #expect(try reader.dictionaryRepresentation() == ["before": "kept"])
  }

  @Test func convertsLikeUserDefaults() throws {
    let temporary = TemporaryDirectory()
    let defaults = try SharedDefaults(container: temporary.container())
    try defaults.set([
      "s": "12", "d": 3.9, "yes": "YES", "strings": ["a", "b"], "mixed": ["a", 1],
    ])
    #expect(try defaults.integer(forKey: "s") == 12)
    #expect(try defaults.integer(forKey: "d") == 3)
    #expect(try defaults.bool(forKey: "yes"))
    #expect(try defaults.string(forKey: "d") == "3.9")
    #expect(try defaults.stringArray(forKey: "strings") == ["a", "b"])
    #expect(try defaults.stringArray(forKey: "mixed") == nil)
  }

  @Test func removesValuesAndFallsBackToRegisteredDefaults() throws {
    let temporary = TemporaryDirectory()
    let defaults = try SharedDefaults(container: temporary.container())
    defaults.register(defaults: ["theme": "light", "count": 3])
    #expect(try defaults.string(forKey: "theme") == "light")
    try defaults.set("dark", forKey: "theme")
    #expect(try defaults.string(forKey: "theme") == "dark")
    try defaults.removeObject(forKey: "theme")
    #expect(try defaults.string(forKey: "theme") == "light")
    // Registered values are never persisted.
    let other = try SharedDefaults(container: temporary.container())
    #expect(try other.object(forKey: "count") == nil)
    #expect(try defaults.dictionaryRepresentation()["count"] == 3)
  }

  @Test func seesAnotherWriterWithoutSynchronize() throws {
    let temporary = TemporaryDirectory()
    let reader = try SharedDefaults(container: temporary.container())
    let writer = try SharedDefaults(container: temporary.container())
    try writer.set("first", forKey: "k")
    #expect(try reader.string(forKey: "k") == "first")
    try writer.set("second", forKey: "k")
    #expect(try reader.string(forKey: "k") == "second")
  }

  @Test func storesABinaryPropertyListWithMode0600() throws {
    let temporary = TemporaryDirectory()
    let defaults = try SharedDefaults(container: temporary.container())
    try defaults.set(1, forKey: "k")
    let bytes = try Data(contentsOf: URL(fileURLWithPath: defaults.path))
    #expect(bytes.prefix(8) == Data("bplist00".utf8))
    #expect(defaults.path.hasSuffix("/preferences/group.com.example.tests.plist"))
    #expect(mode(of: defaults.path) == 0o600)
    #expect(try mode(of: temporary.container().path + "/preferences") == 0o700)
  }

  @Test func refusesValuesOf4MiBOrMore() throws {
    let temporary = TemporaryDirectory()
    let defaults = try SharedDefaults(container: temporary.container())
    let limit = SharedDefaults.maximumValueSize
    try defaults.set(Data(count: limit - 100), forKey: "fits")
    let error = #expect(throws: ContainerError.self) {
      try defaults.set(Data(count: limit), forKey: "big")
    }
    #expect(error?.code == .valueTooLarge)
    #expect(error?.message.contains("'big'") == true)
    let nested = #expect(throws: ContainerError.self) {
      try defaults.set([.data(Data(count: limit / 2)), .data(Data(count: limit / 2))], forKey: "a")
    }
    #expect(nested?.code == .valueTooLarge)
    #expect(try defaults.object(forKey: "big") == nil)
  }

  @Test(arguments: [
    Data(), Data("not a plist".utf8), Data("bplist00".utf8),
    Data("bplist00".utf8 + [UInt8](repeating: 0, count: 40)),
    Data("<?xml version=\"1.0\"?><plist><dict/></plist>".utf8),
  ])
  func reportsACorruptFileAndNeverOverwritesIt(_ contents: Data) throws {
    let temporary = TemporaryDirectory()
    let defaults = try SharedDefaults(container: temporary.container())
    try contents.write(to: URL(fileURLWithPath: defaults.path))
    let read = #expect(throws: ContainerError.self) { try defaults.string(forKey: "k") }
    #expect(read?.code == .corruptFile)
    #expect(read?.message.contains(defaults.path) == true)
    let write = #expect(throws: ContainerError.self) { try defaults.set(1, forKey: "k") }
    #expect(write?.code == .corruptFile)
    #expect(try Data(contentsOf: URL(fileURLWithPath: defaults.path)) == contents)
    try defaults.removePersistentDomain()
    try defaults.set(1, forKey: "k")
    #expect(try defaults.integer(forKey: "k") == 1)
  }

  @Test func refusesAPropertyListWhoseRootIsNotADictionary() throws {
    let temporary = TemporaryDirectory()
    let defaults = try SharedDefaults(container: temporary.container())
    let array = try PropertyListSerialization.data(
      fromPropertyList: ["a"], format: .binary, options: 0)
    try array.write(to: URL(fileURLWithPath: defaults.path))
    #expect(throws: ContainerError.self) { try defaults.dictionaryRepresentation() }
  }

  @Test func refusesInvalidSuiteNames() throws {
    let temporary = TemporaryDirectory()
    for name in ["../x", "a/b", ".hidden", ""] {
      let error = #expect(throws: ContainerError.self) {
        try SharedDefaults(container: temporary.container(), suiteName: name)
      }
      #expect(error?.code == .invalidName)
    }
  }

  @Test(.timeLimit(.minutes(3)))
  func reportsChangesMadeByOtherWriters() async throws {
    let temporary = TemporaryDirectory()
    let defaults = try SharedDefaults(container: temporary.container())
    let other = try SharedDefaults(container: temporary.container())
    let changes = defaults.changes(pollingEvery: .milliseconds(20))
    try other.set("v", forKey: "k1")
    var iterator = changes.makeAsyncIterator()
    let first = await iterator.next()
    #expect(first?.keys == ["k1"])
    try other.set(["k2": 2, "k1": nil])
    let second = await iterator.next()
    #expect(second?.keys == ["k1", "k2"])
  }

  @Test(.timeLimit(.minutes(2)))
  func fourProcessesWritingAtOnceLoseNothing() throws {
    let temporary = TemporaryDirectory()
    let defaults = try SharedDefaults(container: temporary.container())
    let perWriter = 100
    let children = try (0..<4).map { writer in
      try Child(
        ["defaults-write", "group.com.example.tests", String(writer), String(perWriter)],
        groups: temporary.groups)
    }
    for child in children { #expect(child.wait(seconds: 90) == 0) }
    let values = try defaults.dictionaryRepresentation()
    #expect(values.count == 4 * perWriter)
    for writer in 0..<4 {
      for index in 0..<perWriter {
        #expect(values["w\(writer)-\(index)"] == .integer(Int64(index)))
      }
    }
  }
}
