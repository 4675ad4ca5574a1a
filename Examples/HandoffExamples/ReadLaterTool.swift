import AppGroups
public import CommandLineSupport
import DBus
import Foundation
import Handoff
import Notify
import Synchronization

/// `readlater`: plays the read-later app: `readlater watch` imports shares, `readlater list`
/// prints the reading list.
public enum ReadLaterTool {
  /// The top-level command, for `readlater --help`.
  public static let command = CommandDescription(
    name: "readlater",
    abstract: "The read-later app of the handoff example.",
    discussion: """
      readlater watch: drain the group's spool at start and on every doorbell, storing each \
      share as a reading item (duplicates by URL are dropped). readlater list: print the \
      reading list. See 'readlater watch --help' and 'readlater list --help'.
      """,
    version: "0.1.0",
    arguments: [ArgumentDescription("command", abstract: "watch or list.")])

  private static let groupOption = OptionDescription.option(
    "--group", value: "id", abstract: "The App Group.", default: ShareExtensionTool.defaultGroup)

  /// `readlater watch`.
  public static let watchCommand = CommandDescription(
    name: "readlater watch",
    abstract: "Import shares: drain at start and on every doorbell.",
    discussion: """
      Prints one line per stored item. Shares whose URL was imported before are dropped, as \
      the seed app drops them. Each item is stored in its own SQLite transaction keyed by \
      the share id, so a share delivered again after a crash is stored once.
      """,
    version: "0.1.0",
    options: [
      groupOption,
      .option(
        "--notification", value: "name", abstract: "The doorbell to watch.",
        default: ShareExtensionTool.defaultNotification),
      .option(
        "--bus", value: "bus",
        abstract: "The bus: session, system, embedded, auto, or a D-Bus address.",
        default: "auto"),
      .option("--count", "-n", value: "n", abstract: "Exit after storing this many items."),
      .option("--timeout", "-t", value: "seconds", abstract: "Exit after this many seconds."),
    ],
    exitStatuses: [
      .init(.success, "--count items were stored, or --timeout passed without --count."),
      .init(.failure, "The container, the database or the bus failed."),
      .init(ExitCode(2), "--timeout passed before --count items were stored."),
      .init(
        ExitCode(3),
        "Some shares could not be imported: corrupt ones were set aside, undecodable ones "
          + "rejected (each is named on standard error)."),
    ])

  /// `readlater list`.
  public static let listCommand = CommandDescription(
    name: "readlater list",
    abstract: "Print the reading list, oldest first.",
    version: "0.1.0",
    options: [groupOption, .flag("--json", abstract: "Print a JSON array.")])

  /// Dispatches on the first argument.
  public static func main(_ arguments: [String]) async -> Never {
    switch arguments.first {
    case "watch":
      let runner = CommandRunner(watchCommand)
      runner.exit(
        with: await runner.asyncOutcome {
          try await watch(try watchCommand.parse(arguments.dropFirst()))
        })
    case "list":
      let runner = CommandRunner(listCommand)
      runner.exit(
        with: runner.outcome { try list(try listCommand.parse(arguments.dropFirst())) })
    default:
      let runner = CommandRunner(command)
      runner.exit(
        with: runner.outcome {
          _ = try command.parse(arguments[...])
          throw CommandLineError.validation(
            "Unknown command '\(arguments.first ?? "")'; use 'watch' or 'list'.")
        })
    }
  }

  /// Runs `readlater watch`.
  public static func watch(_ arguments: ParsedArguments) async throws {
    let count = try arguments.value("--count", as: UInt.self)
    let timeout = try arguments.value("--timeout", as: Double.self)
    if let timeout, !(timeout >= 0) || !timeout.isFinite {
      throw CommandLineError.validation("--timeout must be a number of seconds, not '\(timeout)'.")
    }
    let bus: Bus
    do {
      bus = try Bus(parsing: arguments.value("--bus") ?? "auto")
    } catch {
      throw CommandLineError.validation("--bus: \(error.message)")
    }
    let importer = try await PendingImporter.connect(
      group: arguments.value("--group") ?? ShareExtensionTool.defaultGroup,
      notification: arguments.value("--notification") ?? ShareExtensionTool.defaultNotification,
      bus: bus, deduplication: .byURL())

    let reachedCount: Bool = try await withThrowingTaskGroup(of: Bool.self) { group in
      let (done, signal) = AsyncStream.makeStream(of: Void.self)
      group.addTask {
        let library = try ReadingList(containerURL: importer.container.url)
        let stored = Mutex(0)
        try StandardOutput.writeLine(
          "app: watching '\(importer.notification)'; library \(library.path)")
        try await importer.run(
          onDrain: { event in
            guard let event else { return }
            let sender = event.sender.map { " from \($0)" } ?? ""
            try? StandardOutput.writeLine("app: heard '\(event.name)'\(sender); draining")
          },
          onFailure: { error in
            // Past --count the handler refuses shares on purpose; they stay for next time.
            guard !(error is CancellationError) else { return }
            try? StandardError.writeLine("app: import failed, will retry: \(error)")
          }
        ) { share in
          if let count, stored.withLock({ $0 }) >= count { throw CancellationError() }
          let item = ReadingItem(share: share)
          if try library.insert(item) {
            let total = stored.withLock { value in
              value += 1
              return value
            }
            try? StandardOutput.writeLine(describe(item, prefix: "app: stored"))
            if let count, total >= count { signal.finish() }
          } else {
            try? StandardOutput.writeLine("app: already stored \(item.id)")
          }
        }
        return false
      }
      if count != nil {
        group.addTask {
          for await _ in done {}
          return true
        }
      }
      if let timeout {
        group.addTask {
          try await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
          return false
        }
      }
      let first = try await group.next() ?? false
      group.cancelAll()
      signal.finish()
      return first
    }
    let totals = importer.totals
    for error in totals.setAside {
      try? StandardError.writeLine("app: set aside a corrupt share: \(error.message)")
    }
    for path in totals.rejected {
      try? StandardError.writeLine(
        "app: rejected a share whose items cannot be decoded; kept at \(path)")
    }
    var line = "app: imported \(totals.imported), dropped \(totals.duplicates) duplicate URLs"
    if !totals.setAside.isEmpty { line += ", set aside \(totals.setAside.count) corrupt" }
    if !totals.rejected.isEmpty { line += ", rejected \(totals.rejected.count) undecodable" }
    try StandardOutput.writeLine(line)
    await importer.center.close()
    if count != nil && !reachedCount { throw ExitCode(2) }
    if !totals.setAside.isEmpty || !totals.rejected.isEmpty { throw ExitCode(3) }
  }

  /// Runs `readlater list`.
  public static func list(_ arguments: ParsedArguments) throws {
    let container = try GroupContainer(
      identifier: arguments.value("--group") ?? ShareExtensionTool.defaultGroup)
    let items = try ReadingList(containerURL: container.url).items()
    if arguments.contains("--json") {
      let objects: [[String: Any]] = items.map { item in
        [
          "id": item.id, "url": item.url ?? NSNull(), "title": item.title, "text": item.text,
          "savedAt": item.savedAt.timeIntervalSince1970,
          "attachments": item.attachments.map { file in
            ["name": file.name, "type": file.type, "path": file.path, "size": file.size]
              as [String: Any]
          },
        ]
      }
      let data = try JSONSerialization.data(
        withJSONObject: objects, options: [.sortedKeys, .withoutEscapingSlashes])
      try StandardOutput.writeLine(String(decoding: data, as: UTF8.self))
      return
    }
    for item in items { try StandardOutput.writeLine(describe(item, prefix: "-")) }
    if items.isEmpty { try StandardOutput.writeLine("(the reading list is empty)") }
  }

  /// One item as a line (plus its text), for `watch` and `list`.
  static func describe(_ item: ReadingItem, prefix: String) -> String {
    var line = "\(prefix) \"\(item.title)\""
    if let url = item.url { line += " <\(url)>" }
    for file in item.attachments {
      line += " +\(file.name) (\(file.type), \(file.size) bytes)"
    }
    if !item.text.isEmpty {
      line += "\n    " + item.text.replacingOccurrences(of: "\n", with: "\n    ")
    }
    return line
  }
}
