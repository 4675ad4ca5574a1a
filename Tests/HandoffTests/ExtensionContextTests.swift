import AppGroups
import BusTestSupport
import ExtensionItems
import Foundation
import Handoff
import Synchronization
import TestSupport
import Testing

/// The extension request with lazy providers and its time limit, against a real spool on a
/// private bus.
@Suite(.enabled(if: PrivateBus.isAvailable), .timeLimit(.minutes(2)))
struct ExtensionContextTests {
  /// Counts handler runs.
  final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func increment() { value.add(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
  }

  /// A limit no test reaches on a loaded machine, where the limit is not what is tested.
  static let generous = Duration.seconds(600)

  /// Every file and directory in the group container, relative to it.
  static func contents(of fixture: HandoffFixture) throws -> Set<String> {
    let root = fixture.groupsDirectory + "/" + HandoffFixture.group
    let enumerator = FileManager.default.enumerator(atPath: root)
    var paths: Set<String> = []
    while let path = enumerator?.nextObject() as? String { paths.insert(path) }
    return paths
  }

  /// The shares in the spool, drained; `handler` sees each while its files exist.
  static func drain(
    _ fixture: HandoffFixture, _ handler: (ReceivedShare) throws -> Void = { _ in }
  ) async throws -> [ReceivedShare] {
    let importer = try await fixture.importer()
    var shares: [ReceivedShare] = []
    try await importer.drainPending { share in
      try handler(share)
      shares.append(share)
    }
    return shares
  }

  @Test func lazyContentIsLoadedOnlyOnDemandAndStoredOnce() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let counter = Counter()
    let big = Data((0..<(HandoffSender.inlineDataLimit + 10)).map { UInt8($0 % 253) })
    var image = ItemProvider()
    image.registerDataRepresentation(for: .png) {
      counter.increment()
      return big
    }
    image.suggestedName = "photo.png"
    var link = ItemProvider()
    link.registerItem(for: .url) { completion in
      counter.increment()
      completion(.url(URL(string: "https://example.com/lazy")!), nil)
    }
    let item = ExtensionItem(attributedTitle: "Lazy", attachments: [link, image])
    let context = ExtensionContext(inputItems: [item], sender: sender, timeLimit: Self.generous)
    // The rule and the type questions answer from the registered types.
    let rule = try ActivationRule(
      propertyListValue: .dictionary([
        "NSExtensionActivationSupportsImageWithMaxCount": 1,
        "NSExtensionActivationSupportsWebURLWithMaxCount": 1,
      ]))
    #expect(ActivationCheck.refusal(for: context.inputItems, rule: rule) == nil)
    #expect(context.inputItems[0].attachments[1].hasItemConforming(to: .image))
    #expect(counter.count == 0)

    let id = try #require(try await context.completeRequest(returningItems: context.inputItems))
    #expect(counter.count == 2)
    // The large payload travelled as an attachment file, read back from the claimed entry.
    var payloads: [Data] = []
    let shares = try await Self.drain(fixture) { share in
      let stored = share.items[0].attachments[1]
      #expect(!stored.hasLazyRepresentations)
      payloads.append(try stored.loadData(for: .png))
    }
    #expect(shares.map(\.id) == [id])
    #expect(shares[0].url?.absoluteString == "https://example.com/lazy")
    #expect(shares[0].attachments.count == 1)
    #expect(payloads == [big])
    #expect(counter.count == 2)
    if case .completed(let shareID)? = context.outcome {
      #expect(shareID == id)
    } else {
      Issue.record("the request did not complete: \(String(describing: context.outcome))")
    }
  }

  @Test func aLazyLoadPastTheTimeLimitStoresNothing() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let before = try Self.contents(of: fixture)
    var never = ItemProvider()
    never.registerDataRepresentation(for: .png) { _ in }  // never calls back
    var slow = ItemProvider()
    slow.registerItem(for: .url) {
      try await Task.sleep(for: .seconds(3600))
      return .url(URL(string: "https://example.com/slow")!)
    }
    let items = [ExtensionItem(attachments: [ItemProvider(text: "now"), slow, never])]
    let context = ExtensionContext(
      inputItems: items, sender: sender, timeLimit: .milliseconds(300))
    #expect(context.timeLimit == .milliseconds(300))
    let error = await #expect(throws: HandoffError.self) {
      try await context.completeRequest(returningItems: context.inputItems)
    }
    #expect(error?.code == .timedOut)
    #expect(error?.message.contains("time limit of 0.3 s") == true)
    guard case .cancelled(let reason as HandoffError)? = context.outcome else {
      Issue.record("the request was not cancelled: \(String(describing: context.outcome))")
      return
    }
    #expect(reason.code == .timedOut)
    // Nothing in the spool, not even a temporary file.
    #expect(try fixture.pendingInSpool() == 0)
    #expect(try Self.contents(of: fixture) == before)
    // The request stays ended; a later load of the input items fails at once.
    await #expect(throws: HandoffError.self) {
      try await context.completeRequest(returningItems: nil)
    }
    let late = await #expect(throws: ItemProviderError.self) {
      try await context.inputItems[0].attachments[1].loadItem(for: .url)
    }
    #expect(late?.code == .cancelled)
    #expect(late?.message.contains("passed its time limit") == true)
  }

  /// The limit is checked when storing begins, not only when its timer runs: a request
  /// past its deadline stores nothing, even with nothing to load.
  @Test func aRequestPastItsDeadlineStoresNothing() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let context = ExtensionContext(
      inputItems: [ExtensionItem(attachments: [ItemProvider(text: "eager")])], sender: sender,
      timeLimit: .zero)
    let error = await #expect(throws: HandoffError.self) {
      try await context.completeRequest(returningItems: context.inputItems)
    }
    #expect(error?.code == .timedOut)
    #expect(error?.message.contains("time limit of 0 s") == true)
    #expect(try fixture.pendingInSpool() == 0)
  }

  @Test func inputItemLoadsInFlightAreCancelledAtTheTimeLimit() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let counter = Counter()
    var provider = ItemProvider()
    provider.registerDataRepresentation(for: .jpeg) { _ in counter.increment() }
    let context = ExtensionContext(
      inputItems: [ExtensionItem(attachments: [provider])], sender: sender,
      timeLimit: .milliseconds(200))
    // A preview load the extension started itself, as a compose sheet does. (On a loaded
    // machine it may start after the limit; it fails the same way then, without a run.)
    let preview = Task {
      try await context.inputItems[0].attachments[0].loadDataRepresentation(for: .image)
    }
    let result = await preview.result
    #expect(counter.count <= 1)
    guard case .failure(let error as ItemProviderError) = result else {
      Issue.record("the preview load did not fail: \(result)")
      return
    }
    #expect(error.code == .cancelled)
    #expect(error.message.contains("loading public.jpeg was cancelled"))
    #expect(error.message.contains("time limit of 0.2 s"))
    #expect(try fixture.pendingInSpool() == 0)
  }

  @Test func cancellingTheRequestCancelsItsLoads() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let started = AsyncStream<Void>.makeStream()
    var provider = ItemProvider()
    provider.registerDataRepresentation(for: .jpeg) { _ in started.continuation.yield() }
    let context = ExtensionContext(
      inputItems: [ExtensionItem(attachments: [provider])], sender: sender,
      timeLimit: Self.generous)
    let completing = Task { try await context.completeRequest(returningItems: context.inputItems) }
    var iterator = started.stream.makeAsyncIterator()
    await iterator.next()
    try context.cancelRequest(withError: HandoffError(.userCancelled, "Cancel pressed"))
    let result = await completing.result
    guard case .failure(let error as HandoffError) = result else {
      Issue.record("completing a cancelled request did not fail: \(result)")
      return
    }
    #expect(error.code == .requestFinished)
    #expect(try fixture.pendingInSpool() == 0)
  }

  @Test func aFailingHandlerStoresNothingAndNamesTheType() async throws {
    struct Unreadable: Error {}
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let before = try Self.contents(of: fixture)
    var provider = ItemProvider(text: "caption")
    provider.registerDataRepresentation(for: .heic) { completion in
      completion(nil, Unreadable())
    }
    let item = ExtensionItem(attachments: [ItemProvider(text: "first"), provider])
    let context = ExtensionContext(inputItems: [item], sender: sender, timeLimit: Self.generous)
    let error = await #expect(throws: HandoffError.self) {
      try await context.completeRequest(returningItems: context.inputItems)
    }
    #expect(error?.code == .loadFailed)
    #expect(
      error?.message
        == "Cannot load the shared items: item 0, attachment 1: the load handler for "
        + "public.heic failed: Unreadable()")
    if case .provider(let cause)? = error?.cause {
      #expect(cause.code == .unknown)
    } else {
      Issue.record("the cause is not the provider's error")
    }
    #expect(try fixture.pendingInSpool() == 0)
    #expect(try Self.contents(of: fixture) == before)
    // The request stays open: the extension can still cancel it.
    #expect(context.outcome == nil)
    try context.cancelRequest(withError: error!)

    // The sender loads too, and refuses to store what it cannot load.
    let sent = await #expect(throws: HandoffError.self) { try await sender.send([item]) }
    #expect(sent?.code == .loadFailed)
    let stored = #expect(throws: HandoffError.self) { try sender.store([item]) }
    #expect(stored?.code == .encoding)
    #expect(stored?.message.contains("public.heic") == true)
    #expect(try fixture.pendingInSpool() == 0)
  }

  @Test func aHandlerCalledTwiceIsHarmless() async throws {
    let fixture = try HandoffFixture()
    let sender = try await fixture.sender()
    let counter = Counter()
    var provider = ItemProvider()
    provider.registerItem(for: .url) { completion in
      counter.increment()
      completion(.url(URL(string: "https://example.com/first")!), nil)
      completion(.url(URL(string: "https://example.com/second")!), nil)
      completion(nil, CancellationError())
    }
    let context = ExtensionContext(
      inputItems: [ExtensionItem(attachments: [provider])], sender: sender,
      timeLimit: Self.generous)
    try await context.completeRequest(returningItems: context.inputItems)
    let shares = try await Self.drain(fixture)
    #expect(shares.count == 1)
    #expect(shares.first?.url?.absoluteString == "https://example.com/first")
    #expect(counter.count == 1)
  }

  @Test func theTimeLimitComesFromTheEnvironment() throws {
    let key = ExtensionContext.timeLimitEnvironmentVariable
    #expect(key == "NOTIFYBUS_EXTENSION_TIME_LIMIT")
    #expect(try ExtensionContext.timeLimit(fromEnvironment: [:]) == .seconds(30))
    #expect(try ExtensionContext.timeLimit(fromEnvironment: [key: ""]) == .seconds(30))
    #expect(try ExtensionContext.timeLimit(fromEnvironment: [key: "2.5"]) == .milliseconds(2500))
    #expect(try ExtensionContext.timeLimit(fromEnvironment: [key: "90"]) == .seconds(90))
    for bad in ["0", "-1", "abc", "1e3", "inf", "nan", "86401", " 5", "5s"] {
      let error = #expect(throws: HandoffError.self) {
        try ExtensionContext.timeLimit(fromEnvironment: [key: bad])
      }
      #expect(error?.code == .invalidTimeLimit)
      #expect(error?.message.hasPrefix("NOTIFYBUS_EXTENSION_TIME_LIMIT=\(bad) is not") == true)
    }
  }

  /// share-extension takes the limit from the environment: a bad value is a usage error
  /// and stores nothing; a good one lets the share through.
  @Test func shareExtensionReadsTheTimeLimit() throws {
    let fixture = try HandoffFixture()
    var environment = fixture.environment
    environment["DBUS_SESSION_BUS_ADDRESS"] = ""
    environment[ExtensionContext.timeLimitEnvironmentVariable] = "soon"
    let arguments = ["--url", "https://example.com/limit"]
    let refused = try Products.run("share-extension", arguments, environment: environment)
    #expect(refused.status == 64, "\(refused)")
    #expect(refused.error.contains("NOTIFYBUS_EXTENSION_TIME_LIMIT=soon is not a time limit"))
    #expect(try fixture.pendingInSpool() == 0)
    environment[ExtensionContext.timeLimitEnvironmentVariable] = "600"
    let stored = try Products.run("share-extension", arguments, environment: environment)
    #expect(stored.status == 0, "\(stored)")
    #expect(try fixture.pendingInSpool() == 1)
  }
}
