import ExtensionItems
import Foundation
import Synchronization
import TestSupport
import Testing

/// Lazy providers: types registered with a load handler (`registerItem(forTypeIdentifier:
/// loadHandler:)`, `registerDataRepresentation`), loaded only when a consumer asks.
@Suite(.timeLimit(.minutes(2)))
struct LazyProviderTests {
  private let temporary = TemporaryDirectory("lazy-provider")
  private var directory: URL { URL(filePath: temporary.path, directoryHint: .isDirectory) }

  /// Counts handler runs.
  final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    func increment() { value.add(1, ordering: .relaxed) }
    var count: Int { value.load(ordering: .relaxed) }
  }

  static let png = Data([0x89, 0x50, 0x4E, 0x47, 1, 2, 3])

  static func lazyImage(_ counter: Counter) -> ItemProvider {
    var provider = ItemProvider()
    provider.registerDataRepresentation(for: .png) {
      counter.increment()
      return png
    }
    provider.suggestedName = "photo.png"
    return provider
  }

  @Test func contentIsLoadedOnlyOnDemandOncePerLoad() async throws {
    let counter = Counter()
    let provider = Self.lazyImage(counter)
    // Asking about types, checking a rule, encoding attempts: no handler run.
    #expect(provider.registeredTypes == [.png])
    #expect(provider.hasItemConforming(to: .image))
    #expect(!provider.hasItemConforming(to: .text))
    #expect(provider.registeredTypes(conformingTo: .data) == [.png])
    let item = ExtensionItem(attachments: [provider])
    #expect(item.hasLazyRepresentations)
    let rule = try ActivationRule(
      propertyListValue: .dictionary(["NSExtensionActivationSupportsImageWithMaxCount": 1]))
    #expect(rule.evaluate([item]))
    let encoding = #expect(throws: ItemCodecError.self) { try ItemCodec.encode([item]) }
    #expect(encoding?.code == .notLoaded)
    #expect(encoding?.message.contains("public.png") == true)
    #expect(throws: ItemCodecError.self) { try ItemCodec.encodeJSON([item]) }
    let sync = #expect(throws: ItemProviderError.self) { try provider.loadData(for: .image) }
    #expect(sync?.code == .itemUnavailable)
    #expect(sync?.message.contains("load handler") == true)
    #expect(counter.count == 0)

    // Each load runs the handler once.
    #expect(try await provider.loadDataRepresentation(for: .image) == Self.png)
    #expect(counter.count == 1)
    #expect(try await provider.loadItem(for: .png) == .data(Self.png))
    #expect(counter.count == 2)

    // Loading for encoding runs it once more; the result is an ordinary provider.
    let loaded = try await ExtensionItem.loaded([item])
    #expect(counter.count == 3)
    #expect(!loaded[0].hasLazyRepresentations)
    #expect(
      loaded[0].attachments[0].representations == [
        ItemRepresentation(type: .png, content: .data(Self.png))
      ])
    #expect(loaded[0].attachments[0].suggestedName == "photo.png")
    #expect(try ItemCodec.decode(ItemCodec.encode(loaded)) == loaded)
    #expect(counter.count == 3)
  }

  @Test func registrationOrderSpansEagerAndLazyTypes() async throws {
    var provider = ItemProvider(text: "caption")
    #expect(provider.registerItem(for: .url) { .url(URL(string: "https://swift.org/")!) })
    #expect(!provider.registerItem(for: .url) { .text("a second registration") })
    #expect(!provider.registerDataRepresentation(for: .utf8PlainText) { Data() })
    provider.register(.data(Data([1])), as: .pdf)
    #expect(provider.registeredTypes == [.utf8PlainText, .url, .pdf])
    #expect(provider.lazyRepresentations.map(\.type) == [.url])
    #expect(provider.lazyRepresentations[0].promisedKind == nil)
    if case .lazy(let lazy)? = provider.registration(conformingTo: .url) {
      #expect(lazy.type == .url)
    } else {
      Issue.record("the URL registration is not lazy")
    }
    let loaded = try await provider.loaded()
    #expect(loaded.registeredTypes == [.utf8PlainText, .url, .pdf])
    #expect(loaded.representations[1].content == .url(URL(string: "https://swift.org/")!))
    // Copies share the registration; a new registration is a different provider.
    let copy = provider
    #expect(copy == provider)
    var other = ItemProvider(text: "caption")
    other.registerItem(for: .url) { .url(URL(string: "https://swift.org/")!) }
    other.register(.data(Data([1])), as: .pdf)
    #expect(other != provider)
  }

  @Test func lazyPayloadsAreCoercedLikeEagerOnes() async throws {
    var provider = ItemProvider()
    provider.registerItem(for: .plainText) { completion in
      completion(.text(" https://swift.org/blog \n"), nil)
    }
    provider.suggestedName = "link.txt"
    let url = try await provider.loadItem(for: .text, as: .url)
    #expect(url == .url(URL(string: "https://swift.org/blog")!))
    #expect(
      try await provider.loadDataRepresentation(for: .data)
        == Data(" https://swift.org/blog \n".utf8))
    let file = try await provider.loadFileRepresentation(
      for: .plainText, temporaryDirectory: directory)
    #expect(file.lastPathComponent == "link.txt")
    #expect(try String(contentsOf: file, encoding: .utf8) == " https://swift.org/blog \n")
    let unavailable = await #expect(throws: ItemProviderError.self) {
      try await provider.loadItem(for: .image)
    }
    #expect(unavailable?.code == .itemUnavailable)
    // A lazy file payload is followed like an eager one.
    let note = directory.appendingPathComponent("note.txt")
    try Data("héllo".utf8).write(to: note)
    var fileProvider = ItemProvider()
    fileProvider.registerItem(for: .plainText) { .file(path: note.path) }
    #expect(try await fileProvider.loadItem(for: .text, as: .text) == .text("héllo"))
  }

  @Test func aFailingHandlerNamesTheType() async throws {
    struct DiskFull: Error {}
    var provider = ItemProvider()
    provider.registerDataRepresentation(for: .png) { completion in completion(nil, DiskFull()) }
    let failed = await #expect(throws: ItemProviderError.self) {
      try await provider.loadDataRepresentation(for: .png)
    }
    #expect(failed?.code == .unknown)
    #expect(failed?.message.contains("the load handler for public.png failed") == true)
    #expect(failed?.message.contains("DiskFull") == true)

    var typed = ItemProvider()
    typed.registerItem(for: .jpeg) {
      throw ItemProviderError(.unexpectedValueClass, "not a JPEG")
    }
    let kept = await #expect(throws: ItemProviderError.self) { try await typed.loaded() }
    #expect(kept?.code == .unexpectedValueClass)
    #expect(kept?.message == "the load handler for public.jpeg failed: not a JPEG")

    var empty = ItemProvider()
    empty.registerItem(for: .url) { completion in completion(nil, nil) }
    let neither = await #expect(throws: ItemProviderError.self) {
      try await empty.loadItem(for: .url)
    }
    #expect(neither?.code == .itemUnavailable)
    #expect(neither?.message.contains("neither a payload nor an error") == true)

    // Several items: the message says where the failing representation is.
    let items = [
      ExtensionItem(attachments: [ItemProvider(text: "fine")]),
      ExtensionItem(attachments: [ItemProvider(text: "fine"), provider]),
    ]
    let placed = await #expect(throws: ItemProviderError.self) {
      try await ExtensionItem.loaded(items)
    }
    #expect(
      placed?.message.hasPrefix("item 1, attachment 1: the load handler for public.png") == true)
  }

  @Test func aCompletionCalledTwiceIsHarmless() async throws {
    let counter = Counter()
    var provider = ItemProvider()
    provider.registerDataRepresentation(for: .png) { completion in
      counter.increment()
      completion(Self.png, nil)
      completion(Data([0]), nil)
      completion(nil, CancellationError())
    }
    #expect(try await provider.loadDataRepresentation(for: .png) == Self.png)
    #expect(try await provider.loadDataRepresentation(for: .png) == Self.png)
    #expect(counter.count == 2)
  }

  /// A handler that never calls back holds its load until the task is cancelled; the load
  /// then ends at once and the handler's task sees the cancellation.
  @Test func aHandlerThatNeverCompletesEndsWhenItsLoadIsCancelled() async throws {
    let started = AsyncStream<Void>.makeStream()
    let handlerCancelled = AsyncStream<Void>.makeStream()
    var silent = ItemProvider()
    silent.registerDataRepresentation(for: .png) { _ in started.continuation.yield() }
    var stuck = ItemProvider()
    stuck.registerDataRepresentation(for: .jpeg) {
      started.continuation.yield()
      try? await Task.sleep(for: .seconds(3600))
      handlerCancelled.continuation.yield()
      return Data()
    }
    for (provider, type) in [(silent, UniformType.png), (stuck, .jpeg)] {
      let load = Task { try await provider.loadDataRepresentation(for: type) }
      var iterator = started.stream.makeAsyncIterator()
      await iterator.next()
      load.cancel()
      let result = await load.result
      guard case .failure(let error as ItemProviderError) = result else {
        Issue.record("the load of \(type) did not end with an error: \(result)")
        continue
      }
      #expect(error.code == .cancelled)
      #expect(error.message == "loading \(type) was cancelled")
      #expect("\(error)".hasSuffix("(NSCocoaErrorDomain 3072)"))
    }
    var iterator = handlerCancelled.stream.makeAsyncIterator()
    await iterator.next()
  }

  @MainActor
  @Test func handlersRunOffTheCallersActor() async throws {
    let onMain = Mutex<Bool?>(nil)
    var provider = ItemProvider()
    provider.registerItem(for: .plainText) { completion in
      onMain.withLock { $0 = Thread.isMainThread }
      completion(.text("x"), nil)
    }
    #expect(try await provider.loadItem(for: .text) == .text("x"))
    #expect(onMain.withLock { $0 } == false)
  }
}
