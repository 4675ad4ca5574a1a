import DBus
import Notify
import TestSupport
import Testing

/// A synchronous call after a post is a fence (issue 11, item 17): once the poster's
/// ``NotifyCenter/synchronize()`` returns, a check on another connection (another
/// process, as far as the bus is concerned) sees the post.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct FenceTests {
  let bus: PrivateBus

  init() throws { bus = try PrivateBus() }

  @Test func aCheckConfirmedWithTheBusNeverMissesAFencedPost() async throws {
    let poster = try await NotifyCenter.connect(to: .address(bus.address))
    let checker = try await NotifyCenter.connect(to: .address(bus.address))
    let name: NotifyName = "group.example.fence"
    let token = try await checker.registerCheck(name)
    #expect(try checker.check(token))
    var misses = 0
    for _ in 0..<500 {
      try poster.post(name)
      try await poster.synchronize()
      if try await !checker.synchronizedCheck(token) { misses += 1 }
      #expect(try !checker.check(token), "a post was counted twice")
    }
    #expect(misses == 0, "\(misses) of 500 checks missed a fenced post")
  }

  @Test func aConfirmedCheckOfADeadTokenIsRefused() async throws {
    let checker = try await NotifyCenter.connect(to: .address(bus.address))
    let token = try await checker.registerCheck("group.example.fence")
    try checker.cancel(token)
    let error = await #expect(throws: NotifyError.self) {
      _ = try await checker.synchronizedCheck(token)
    }
    #expect(error?.status == .invalidToken)
  }
}
