import NotifyServer
import NotifyServerFiles
import SystemSupport
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// notifyd's state file on disk: the reader takes what the writer may write, corrupt files
/// are kept under unique names, nothing is written through a planted link.
struct StateStoreTests {
  /// A fresh private directory, removed afterwards.
  final class Scratch {
    let path: String
    init() throws {
      var template = Array("/tmp/notifyd-store-XXXXXX".utf8CString)
      guard let made = mkdtemp(&template) else { throw Errno.current }
      path = String(cString: made)
    }
    deinit { Subprocess.removeTree(path) }
    var state: String { path + "/state/notifyd.state" }
  }

  /// The largest records the writer may write: names of 511 bytes, spaces escaped as %20.
  static func worstCase(_ count: Int) -> [StateRecord] {
    (0..<count).map { index in
      let tail = " \(index)"
      let name = String(repeating: " ", count: 511 - tail.utf8.count) + tail
      return StateRecord(name: name, state: .max, setTimeNanoseconds: .max)
    }
  }

  @Test func theSizeLimitCoversTheLongestRecords() {
    for count in [0, 1, 7] {
      let bytes = StateFile.serialize(Self.worstCase(count))
      #expect(bytes.count <= StateFile.maximumSize(records: count))
      #expect(bytes.count > StateFile.maximumSize(records: count) - 2 * count - 1)
    }
    #expect(StateFile.maximumSize(records: .max) == .max)
  }

  /// Issue 11, item 1: 46,000 names of 511 bytes make a 70 MB file, which the reader took
  /// as too large; the reader's limit now follows from `maximumRecords` (`--max-names`).
  @Test func aFileOfTheMostNamesOfTheLongestLengthIsReadBack() throws {
    let scratch = try Scratch()
    let store = StateStore(path: scratch.state, maximumRecords: 46_000)
    let records = Self.worstCase(46_000)
    try store.save(records)
    var info = stat()
    #expect(stat(scratch.state, &info) == 0)
    #expect(info.st_size > 64 << 20)
    guard case .records(let loaded) = try store.load() else {
      Issue.record("not read back")
      return
    }
    #expect(loaded.count == 46_000)
    #expect(loaded.first.map { records.contains($0) } == true)
  }

  /// More names than `--max-names` allows: moved aside as corrupt, so notifyd still starts.
  @Test func moreNamesThanTheReaderTakesAreMovedAside() throws {
    let scratch = try Scratch()
    try StateStore(path: scratch.state, maximumRecords: 10).save(Self.worstCase(10))
    let small = StateStore(path: scratch.state, maximumRecords: 3)
    guard case .corrupt(let error, let aside) = try small.load() else {
      Issue.record("not moved aside")
      return
    }
    #expect(error.code == .tooLarge, "\(error)")
    #expect(error.message.contains("--max-names"), "\(error)")
    #expect(aside.hasPrefix(scratch.state + ".corrupt-"))
    #expect(access(aside, F_OK) == 0)
  }

  /// Issue 11, item 2: two corrupt files in the same second keep two copies.
  @Test func corruptCopiesGetUniqueNames() throws {
    let scratch = try Scratch()
    let store = StateStore(path: scratch.state)
    try store.save([])
    var asides: [String] = []
    for text in ["first garbage\n", "second garbage\n", "third garbage\n"] {
      writeFile(scratch.state, text)
      guard case .corrupt(_, let aside) = try store.load() else {
        Issue.record("not moved aside")
        return
      }
      asides.append(aside)
    }
    #expect(Set(asides).count == 3, "\(asides)")
    #expect(readFile(asides[0]) == "first garbage\n")
    #expect(readFile(asides[1]) == "second garbage\n")
    #expect(readFile(asides[2]) == "third garbage\n")
  }

  /// Issue 11, item 3: a link planted at the old temporary name `PATH.tmp-<pid>` (or any
  /// other) is never written through, and the state file stays a regular file.
  @Test func aLinkPlantedAtTheTemporaryNameIsNotWrittenThrough() throws {
    let scratch = try Scratch()
    let store = StateStore(path: scratch.state)
    try store.save([])
    let victim = scratch.path + "/victim"
    writeFile(victim, "untouched\n")
    #expect(symlink(victim, scratch.state + ".tmp-\(getpid())") == 0)
    try store.save([StateRecord(name: "a", state: 1, setTimeNanoseconds: 2)])
    #expect(readFile(victim) == "untouched\n")
    var info = stat()
    #expect(lstat(scratch.state, &info) == 0)
    #expect(info.st_mode & S_IFMT == S_IFREG)
    guard case .records(let loaded) = try store.load() else {
      Issue.record("not read back")
      return
    }
    #expect(loaded == [StateRecord(name: "a", state: 1, setTimeNanoseconds: 2)])
  }

  /// Issue 11, item 12: a flipped byte in a name is detected by the checksum and the file is
  /// moved aside, instead of loading as another name.
  @Test func aFlippedByteIsDetectedAndTheFileMovedAside() throws {
    let scratch = try Scratch()
    let store = StateStore(path: scratch.state)
    try store.save([StateRecord(name: "group.example.kept", state: 42, setTimeNanoseconds: 1)])
    var text = Array(try #require(readFile(scratch.state)).utf8)
    let index = try #require(text.firstIndex(of: UInt8(ascii: "k")))
    text[index] = UInt8(ascii: "K")
    writeFile(scratch.state, String(decoding: text, as: UTF8.self))
    guard case .corrupt(let error, let aside) = try store.load() else {
      Issue.record("a flipped byte loaded")
      return
    }
    #expect(error.code == .badChecksum, "\(error)")
    #expect(error.message.contains("does not match"), "\(error)")
    #expect(readFile(aside) == String(decoding: text, as: UTF8.self))
    #expect(access(scratch.state, F_OK) != 0)
  }

  /// Version 1 files, without a checksum, are still read; the next write is version 2.
  @Test func versionOneFilesAreStillRead() throws {
    let scratch = try Scratch()
    let store = StateStore(path: scratch.state)
    try store.save([])
    writeFile(scratch.state, "notifyd-state 1\nold%20name 7 9\n")
    guard case .records(let loaded) = try store.load() else {
      Issue.record("a version 1 file was refused")
      return
    }
    #expect(loaded == [StateRecord(name: "old name", state: 7, setTimeNanoseconds: 9)])
    try store.save(loaded)
    #expect(
      readFile(scratch.state)?.hasPrefix("notifyd-state 2\nold%20name 7 9\nchecksum ") == true)
  }

  /// A FIFO or a link at the state file's path is an error that says what it is, and no
  /// read blocks.
  @Test func aFIFOOrALinkAtThePathIsNamed() throws {
    let scratch = try Scratch()
    let store = StateStore(path: scratch.state)
    try store.save([])
    unlink(scratch.state)
    #expect(mkfifo(scratch.state, 0o600) == 0)
    let fifo = #expect(throws: NotifydFileError.self) { _ = try store.load() }
    #expect(fifo?.message.contains("it is a FIFO (named pipe), not a regular file") == true)
    unlink(scratch.state)
    #expect(symlink("/etc/passwd", scratch.state) == 0)
    let link = #expect(throws: NotifydFileError.self) { _ = try store.load() }
    #expect(link?.message.contains("symbolic link") == true, "\(String(describing: link))")
  }
}
