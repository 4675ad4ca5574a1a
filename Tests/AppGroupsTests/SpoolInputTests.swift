import AppGroups
import Foundation
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// What the spool reads when handed a file: regular files only, and never more than its
/// quota.
struct SpoolInputTests {
  /// A FIFO would block the read and `/dev/zero` (even behind a link) would fill the disk:
  /// both are refused before anything is read, and nothing is left in `tmp/`.
  @Test func aFIFOOrADeviceAttachmentIsRefused() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(container: temporary.container(), name: "inputs")
    let fifo = temporary.path + "/pipe"
    #expect(mkfifo(fifo, 0o600) == 0)
    let zero = temporary.path + "/zero"
    #expect(symlink("/dev/zero", zero) == 0)
    for (path, what) in [(fifo, "a FIFO (named pipe)"), (zero, "a character device")] {
      let error = #expect(throws: ContainerError.self) {
        try spool.enqueue(payload: [1], attachments: [.file(URL(fileURLWithPath: path))])
      }
      #expect(error?.code == .wrongFileType, "\(String(describing: error))")
      #expect(error?.message.contains("it is \(what), not a regular file") == true)
    }
    #expect(try spool.pendingCount() == 0)
    #expect(try FileManager.default.contentsOfDirectory(atPath: spool.path + "/tmp").isEmpty)
  }

  /// An attachment larger than what the quota has left stops being copied at the quota.
  @Test func anAttachmentPastTheQuotaIsRefusedWhileCopying() throws {
    let temporary = TemporaryDirectory()
    let spool = try Spool(
      container: temporary.container(), name: "small",
      limits: SpoolLimits(maximumBytes: 100_000))
    let big = temporary.path + "/big"
    #expect(FileManager.default.createFile(atPath: big, contents: Data(count: 1_000_000)))
    let error = #expect(throws: ContainerError.self) {
      try spool.enqueue(payload: [1], attachments: [.file(URL(fileURLWithPath: big))])
    }
    #expect(error?.code == .quotaExceeded, "\(String(describing: error))")
    // Named while copying, not after the whole file was copied.
    #expect(error?.message.contains("The attachment '\(big)' is larger than") == true)
    #expect(try spool.pendingCount() == 0)
  }
}
