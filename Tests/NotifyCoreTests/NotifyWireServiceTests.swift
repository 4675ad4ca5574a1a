import DBusCore
import NotifyCore
import Testing

/// The messages a center sends to notifyd (Protocol/notifyd.md).
struct NotifyWireServiceTests {
  @Test func serviceCallsHaveTheDocumentedShape() {
    let post = NotifyWire.mediatedPost("group.example.saved")
    #expect(post.destination == "org.notifybus.Notify1")
    #expect(post.path == "/org/notifybus/Notify1")
    #expect(post.interface == "org.notifybus.Notify1")
    #expect(post.member == "Post")
    #expect(post.signature == "s")
    let restore = NotifyWire.restoreState("a.b", 7, setTime: 9)
    #expect(restore.member == "RestoreState")
    #expect(restore.body == [.string("a.b"), .uint64(7), .uint64(9)])
    #expect(
      NotifyWire.serviceOwnerRule.description
        == "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
        + "member='NameOwnerChanged',arg0='org.notifybus.Notify1'")
  }

  @Test func serviceErrorsMapToDarwinStatuses() {
    let denied = NotifyWire.error(fromService: DBusError(.accessDenied, "uid 5 may not post 'x'"))
    #expect(denied.status == .notAuthorized)
    #expect(denied.message == "uid 5 may not post 'x'")
    #expect(NotifyWire.error(fromService: DBusError(.serviceUnknown, "")).status == .serverNotFound)
    #expect(NotifyWire.error(fromService: DBusError(.invalidArgs, "")).status == .invalidName)
    #expect(NotifyWire.error(fromService: DBusError(.limitsExceeded, "")).status == .failed)
  }
}
