import CommandLineSupport
import NotifyServer
import SystemSupport
import TestSupport
import Testing

struct NotifydManualPageTests {
  /// `man/notifyd.8` is generated from the command's description; set
  /// `NOTIFYBUS_UPDATE_MAN=1` to rewrite it.
  @Test func checkedInManualPageIsUpToDate() throws {
    let root = Repository.root
    let path = "\(root)/man/notifyd.8"
    let expected = Notifyd.command.manualPage(section: 8, source: "NotifyBus 0.1.0")
    if Environment.value("NOTIFYBUS_UPDATE_MAN") != nil { writeFile(path, expected, mode: 0o644) }
    #expect(readFile(path) == expected, "man/notifyd.8 is stale: run with NOTIFYBUS_UPDATE_MAN=1")
  }
}
