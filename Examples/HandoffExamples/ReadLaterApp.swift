public import Activation
import AppGroups
public import CommandLineSupport
import DBus
public import Foundation
public import Handoff
import Notify
import NotifyToolsCore
import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The read-later app as a D-Bus-activatable application (`readlater open`): the iOS
/// original's `.onOpenURL { url in importer.drainPending(…) }` for `readlater://` URLs, and
/// the extension's `openURL("readlater://import?count=N")`.
public enum ReadLaterApp {
  /// The application id: the desktop entry `org.notifybus.ReadLater.desktop`, the bus name
  /// and, as `/org/notifybus/ReadLater`, the object path.
  public static let id: ApplicationID = "org.notifybus.ReadLater"
  /// The URL scheme the app handles (`MimeType=x-scheme-handler/readlater`).
  public static let scheme = "readlater"
  /// How long an instance with nothing to do stays, unless `--idle-timeout` says.
  public static let defaultIdleTimeout = Duration.seconds(10)

  /// `readlater://import?count=N`: import the N shares waiting.
  public static func importURL(count: Int) -> URL {
    URL(string: "\(scheme)://import?count=\(count)")!
  }

  /// What a `readlater:` URL asks for: `readlater://import` (drain), with the optional
  /// `count` of shares waiting.
  ///
  /// - Throws: ``ActivationError`` with code ``ActivationError/Code/invalidURL`` for another
  ///   scheme, another action, or a count that is not a number.
  public static func importCount(of url: URL) throws(ActivationError) -> Int? {
    guard url.scheme?.lowercased() == scheme else {
      throw ActivationError(
        .invalidURL,
        "readlater opens readlater: URLs, not '\(url.absoluteString)' "
          + "(scheme \(url.scheme.map { "'\($0)'" } ?? "missing"))")
    }
    let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
    guard url.host == "import", (components?.path ?? "").isEmpty || components?.path == "/" else {
      throw ActivationError(
        .invalidURL,
        "readlater cannot open '\(url.absoluteString)': it knows readlater://import?count=N")
    }
    guard let text = components?.queryItems?.first(where: { $0.name == "count" })?.value else {
      return nil
    }
    guard let count = Int(text), count >= 0 else {
      throw ActivationError(
        .invalidURL,
        "readlater cannot open '\(url.absoluteString)': count '\(text)' is not a number")
    }
    return count
  }

  /// The extension's side, as the seed's `openURL("readlater://import?count=N")` after
  /// saving: opens `readlater://import?count=N` (N the shares waiting in the sender's spool)
  /// in the app, and says how, as a line for the extension to print.
  ///
  /// When no application handles `readlater:` URLs (an uninstalled clone) nothing is opened
  /// and the line says so: the share is stored and the doorbell rung, so a running app has
  /// it and a stopped one drains it at its next start.
  ///
  /// - Throws: ``ActivationError`` when the app is installed but could not be reached or
  ///   refused the URL.
  public static func openImport(_ context: ExtensionContext) async throws(ActivationError)
    -> String
  {
    let count = (try? context.sender.spool.pendingCount()) ?? 1
    let url = importURL(count: count)
    do {
      return "extension: opened \(url.absoluteString) \(try await context.open(url))"
    } catch  where error.code == .noHandler {
      return "extension: no application handles \(scheme): URLs, so \(url.absoluteString) was "
        + "not opened; the app drains the share at its next start"
    }
  }

  /// `readlater open`.
  public static let openCommand = CommandDescription(
    name: "open",
    abstract: "Run as the D-Bus-activatable app: open readlater:// URLs, then exit when idle.",
    discussion: """
      Owns org.notifybus.ReadLater on the bus and serves org.freedesktop.Application at \
      /org/notifybus/ReadLater, drains the group's spool at start, on every doorbell and \
      for every readlater://import?count=N it is asked to open (an Open call is answered \
      once the drain is done), and exits after --idle-timeout seconds without a request. \
      When another readlater already owns the name, the URLs are handed to it (Open) and \
      this process exits 0. The bus starts it through its D-Bus service file; the desktop \
      entry's Exec line runs it with the URLs as arguments.
      """,
    arguments: [
      ArgumentDescription(
        "url", abstract: "readlater://import?count=N URLs to open.", isOptional: true,
        isRepeating: true)
    ],
    options: [
      .option(
        "--group", value: "id", abstract: "The App Group.",
        default: ShareExtensionTool.defaultGroup),
      .option(
        "--notification", value: "name", abstract: "The doorbell to watch.",
        default: ShareExtensionTool.defaultNotification),
      .bus(
        abstract:
          "The bus: session, system, embedded, auto, or a D-Bus address (default: the "
          + "activating bus, else auto).",
        default: nil),
      .timeout(
        "--idle-timeout",
        abstract: "Exit after this many seconds without a request (default 10)."),
      .option(
        "--log", value: "path",
        abstract: "Append standard output and error to this file (for a bus-started app)."
      ).with { $0.completion = .file },
    ],
    exitStatuses: [
      .init(.success, "The idle timeout passed, or the URLs were handed to the running app."),
      .init(
        .failure, "The container, the database or the bus failed, or the running app refused."),
      .init(.validationFailure, "A URL is not a readlater://import URL (nothing is stored)."),
      .init(
        ExitCode(3),
        "Some shares could not be imported: corrupt ones were set aside, undecodable ones "
          + "rejected (each is named on standard error)."),
    ])

  /// Runs `readlater open`.
  public static func open(_ arguments: ParsedArguments) async throws {
    let urls = Application.urls(fromArguments: arguments.values("url"))
    for url in urls {
      do {
        _ = try importCount(of: url)
      } catch {
        throw CommandLineError.validation(error.message)
      }
    }
    let idleTimeout =
      try arguments.value("--idle-timeout", as: Timeout.self)?.duration ?? defaultIdleTimeout
    let group = try ShareExtensionTool.group(from: arguments)
    let notification = try ShareExtensionTool.notification(from: arguments)
    let bus = try arguments.bus() ?? Application.defaultBus
    if let path = arguments.value("--log") {
      // Started by the bus, the app has no terminal: its lines go where the user looks.
      do {
        try redirectStandardStreams(appendingTo: absolutePath(path))
      } catch {
        throw CommandLineError.validation("--log: \(error).")
      }
    }
    let application: Application
    switch try await Application.launch(
      id: id, bus: bus, opening: urls, idleTimeout: idleTimeout)
    {
    case .remote(let owner):
      let what =
        urls.isEmpty
        ? "activated" : "handed " + urls.map(\.absoluteString).joined(separator: " ") + " to"
      try StandardOutput.writeLine("app: \(what) the running \(id) (\(owner))")
      return
    case .primary(let primary):
      application = primary
    }
    guard let address = await application.connection.address else {
      throw ToolError(.busUnreachable, "the bus connection of \(id) has no address")
    }
    let importer = try await PendingImporter.connect(
      group: group.rawValue, notification: notification.rawValue, bus: .address(address),
      deduplication: .byURL())
    // The SQLite connection is not Sendable; the drains, one at a time, take turns.
    let list = try ReadingList(containerURL: importer.container.url)
    let libraryPath = list.path
    let library = Mutex(list)
    let drains = SerialDrains()
    /// Writes a line; the app has no terminal when the bus started it, so a failure to
    /// write is not a reason to stop importing.
    @Sendable func emit(_ line: String) { try? StandardOutput.writeLine(line) }
    @Sendable func drain(_ reason: String) async throws {
      try await drains.run {
        emit("app: \(reason); draining")
        try await importer.drainPending { share in
          let item = ReadingItem(share: share)
          if try library.withLock({ try $0.insert(item) }) {
            emit(ReadLaterTool.describe(item, prefix: "app: stored"))
          } else {
            emit("app: already stored \(item.id)")
          }
        }
      }
    }
    emit(
      "app: \(id) (pid \(getpid())) on the bus; library \(libraryPath); exits after "
        + "\(idleTimeout) idle")
    // Register for the doorbell first, then drain: a share stored before the start, or
    // while the app was not running, is drained now.
    let events = try await importer.center.events(for: importer.notification, bufferSize: 1)
    let doorbells = Task {
      do {
        try await application.activity { try await drain("started") }
        for await event in events {
          try await application.activity {
            try await drain("heard '\(event.name)'\(event.sender.map { " from \($0)" } ?? "")")
          }
        }
      } catch {
        try? StandardError.writeLine(
          "app: import failed, will retry at the next doorbell: \(error)")
      }
    }
    try await application.run { request in
      switch request {
      case .open(let urls, _):
        for url in urls {
          let count = try importCount(of: url)
          try await drain(
            "asked to open \(url.absoluteString)" + (count.map { " (\($0) waiting)" } ?? ""))
        }
      case .activate:
        try await drain("activated")
      case .action(let name, _, _):
        guard name == "import" else {
          throw ActivationError(.invalidURL, "readlater has no action '\(name)'; it has 'import'")
        }
        try await drain("action 'import'")
      }
    }
    doorbells.cancel()
    let totals = importer.totals
    emit(ReadLaterTool.summary(totals) + "; idle for \(idleTimeout), exiting")
    await importer.center.close()
    await application.connection.close()
    if !totals.setAside.isEmpty || !totals.rejected.isEmpty { throw ExitCode(3) }
  }
}

/// Drains one after another: an `Open` answered after its drain is then answered after
/// every share stored before it, even one a doorbell's drain was already importing.
final class SerialDrains: Sendable {
  private let last = Mutex<Task<Void, Never>?>(nil)

  func run(_ body: @escaping @Sendable () async throws -> Void) async throws {
    let (previous, done) = last.withLock {
      last -> (Task<Void, Never>?, AsyncStream<Void>.Continuation) in
      let (stream, continuation) = AsyncStream.makeStream(of: Void.self)
      let previous = last
      last = Task { for await _ in stream {} }
      return (previous, continuation)
    }
    defer { done.finish() }
    await previous?.value
    try await body()
  }
}
