import AppGroups
import BusTestSupport
import DBus
import ExtensionItems
import Foundation
import Handoff
import HandoffExamples
import Notify
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// A handoff error keeps the error it came from, so an app can tell failures apart.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct HandoffErrorTests {
  let item = ExtensionItem(
    attributedTitle: "A page", attachments: [ItemProvider(url: URL(string: "https://example.com")!)]
  )

  @Test func aFullSpoolIsQuotaExceededBelowTheHandoffError() async throws {
    let fixture = try HandoffFixture()
    let sender = try HandoffSender(
      container: fixture.container(), notification: NotifyName(HandoffFixture.notification),
      center: await fixture.center(), limits: SpoolLimits(maximumEntries: 1))
    try await sender.send([item])
    let error = await #expect(throws: HandoffError.self) { try await sender.send([self.item]) }
    #expect(error?.code == .container)
    guard case .container(let lower)? = error?.cause else {
      Issue.record("no container error below \(String(describing: error))")
      return
    }
    #expect(lower.code == .quotaExceeded)
    #expect(lower.cause == nil, "a quota is no system call's failure")
    #expect(error?.message.hasPrefix("Cannot store the share in ") == true)
    #expect(error?.message.hasSuffix(lower.message) == true)
    #expect((error?.cause?.error as? ContainerError) == lower)
  }

  /// The extension runs as a user that may not create the groups directory: EACCES.
  @Test func anUnwritableGroupsDirectoryIsEACCESBelowTheHandoffError() throws {
    let locked = TemporaryDirectory("handoff-eacces")
    #expect(chmod(locked.path, 0o555) == 0)
    let asAnotherUser =
      getuid() == 0
      ? ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] : []
    try #require(asAnotherUser.isEmpty || access(asAnotherUser[0], X_OK) == 0)
    let command = asAnotherUser + [Products.path("handoff-stress"), "1", "eacces"]
    let result = try Products.runCommand(
      command[0], Array(command.dropFirst()),
      environment: ["NOTIFYBUS_GROUPS_DIR": locked.path("groups"), "NOTIFYBUS_BUS_ADDRESS": ""])
    #expect(result.status == 1, "\(result)")
    #expect(result.output == "cause: notWritable errno \(EACCES)\n", "\(result)")
    #expect(result.error.contains("Cannot open the container of group.example.readlater: "))
  }

  @Test func anUnreachableBusIsABusErrorBelowTheNotifyError() async throws {
    let fixture = try HandoffFixture()
    let error = await #expect(throws: HandoffError.self) {
      _ = try await HandoffSender.connect(
        group: HandoffFixture.group, notification: HandoffFixture.notification,
        bus: .address(.unixSocket(fixture.bus.directory + "/no-bus")))
    }
    #expect(error?.code == .notConnected)
    guard case .notify(let notify)? = error?.cause, case .bus(let bus)? = notify.cause else {
      Issue.record("no bus error below \(String(describing: error))")
      return
    }
    #expect(notify.status == .serverNotFound)
    #expect(notify.message.hasSuffix(bus.message))
  }
}

struct ReadingListErrorTests {
  @Test func aLibraryThatIsNotADatabaseSaysWhyWithSQLitesCode() throws {
    let directory = TemporaryDirectory("reading-list")
    // Not a database where the library should be: SQLite refuses it at the first statement.
    #expect(mkdir(directory.path("ReadLater"), 0o700) == 0)
    writeFile(
      directory.path("ReadLater/library.sqlite"), String(repeating: "not a database ", count: 64))
    let error = #expect(throws: ReadingList.Failure.self) {
      _ = try ReadingList(containerURL: URL(fileURLWithPath: directory.path))
    }
    #expect(error?.operation.hasPrefix("PRAGMA") == true, "\(String(describing: error))")
    #expect(error?.resultCode == 26, "SQLITE_NOTADB")
    #expect(error?.message.hasPrefix("SQLite failed on 'PRAGMA") == true)
  }
}
