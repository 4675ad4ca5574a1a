import AppGroups
public import CommandLineSupport
import DBus
import Foundation
import Handoff
import Notify
import NotifyToolsCore
import Synchronization

/// `readlater`: plays the read-later app: `readlater watch` imports shares, `readlater list`
/// prints the reading list.
public enum ReadLaterTool {
  private static let groupOption = OptionDescription.option(
    "--group", value: "id", abstract: "The App Group.", default: ShareExtensionTool.defaultGroup)

  /// `readlater watch`.
  public static let watchCommand = CommandDescription(
    name: "watch",
    abstract: "Import shares: drain at start and on every doorbell.",
    discussion: """
      Prints one line per stored item. Shares whose URL was imported before are dropped, as \
      the seed app drops them. Each item is stored in its own SQLite transaction keyed by \
      the share id, so a share delivered again after a crash is stored once.
      """,
    options: [
      groupOption,
      .option(
        "--notification", value: "name", abstract: "The doorbell to watch.",
        default: ShareExtensionTool.defaultNotification),
      .bus,
      .count("--count", "-n", abstract: "Exit after storing this many items (at least 1)."),
      .timeout(
        "--timeout", "-t",
        abstract: "Exit after this many seconds (0 to \(Timeout.maximumSeconds))."),
    ],
    exitStatuses: [
      .init(.success, "--count items were stored, or --timeout passed without --count."),
      .init(
        .failure,
        "The container, the database or the bus failed, or standard output could not be "
          + "written (such as a closed pipe when SIGPIPE is ignored)."),
      .init(ExitCode(2), "--timeout passed before --count items were stored."),
      .init(
        ExitCode(3),
        "Some shares could not be imported: corrupt ones were set aside, undecodable ones "
          + "rejected (each is named on standard error)."),
    ])

  /// `readlater list`.
  public static let listCommand = CommandDescription(
    name: "list",
    abstract: "Print the reading list, oldest first.",
    options: [groupOption, .flag("--json", abstract: "Print a JSON array.")])

  /// The command line: `readlater watch` and `readlater list`.
  public static let command = CommandDescription(
    name: "readlater",
    abstract: "The read-later app of the handoff example.",
    discussion: """
      readlater watch drains the group's spool at start and on every doorbell, storing each \
      share as a reading item (duplicates by URL are dropped); readlater open does the same \
      as a D-Bus-activatable app, started by the bus for readlater://import?count=N and \
      exiting when idle; readlater list prints the reading list. The list is an SQLite \
      database in the group container.
      """,
    version: notifyBusVersion,
    subcommands: [watchCommand, listCommand, ReadLaterApp.openCommand],
    environment: ShareExtensionTool.environment,
    files: [
      .init(
        "$XDG_DATA_HOME/notifybus/groups/GROUP/ReadLater/library.sqlite",
        "The reading list; attachments are copied to Attachments beside it.")
    ],
    examples: [
      .init(
        "readlater watch --count 1 --timeout 60",
        "Import shares until one item is stored, for at most a minute:"),
      .init("readlater list --json", "Print the reading list as JSON:"),
    ],
    seeAlso: ["share-extension(1)", "notify-watch(1)"])

  /// Runs the subcommand that was parsed.
  public static func run(_ arguments: ParsedArguments) async throws {
    switch arguments.command.name {
    case "watch": try await watch(arguments)
    case "open": try await ReadLaterApp.open(arguments)
    default: try list(arguments)
    }
  }

  /// Runs `readlater watch`.
  public static func watch(_ arguments: ParsedArguments) async throws {
    let count = try arguments.value("--count", as: Count.self)?.value
    let timeout = try arguments.value("--timeout", as: Timeout.self)?.duration
    let group = try ShareExtensionTool.group(from: arguments)
    let notification = try ShareExtensionTool.notification(from: arguments)
    let importer = try await PendingImporter.connect(
      group: group.rawValue, notification: notification.rawValue,
      bus: try arguments.bus() ?? .automatic, deduplication: .byURL())

    /// Why the watch ended.
    enum Ending {
      case counted, timedOut
      case writeFailed(StandardStreamError)
    }
    // `done` ends when --count items are stored; it carries a failure to write stdout.
    let (done, signal) = AsyncStream.makeStream(of: StandardStreamError.self)
    let ending: Ending = try await withThrowingTaskGroup(of: Ending.self) { group in
      group.addTask {
        /// Writes a line; a failure (EPIPE when SIGPIPE is ignored) ends the watch.
        @Sendable func emit(_ line: String) {
          do {
            try StandardOutput.writeLine(line)
          } catch {
            signal.yield(error)
            signal.finish()
          }
        }
        let library = try ReadingList(containerURL: importer.container.url)
        let stored = Mutex(0)
        try StandardOutput.writeLine(
          "app: watching '\(importer.notification)'; library \(library.path)")
        try await importer.run(
          onDrain: { event in
            guard let event else { return }
            let sender = event.sender.map { " from \($0)" } ?? ""
            emit("app: heard '\(event.name)'\(sender); draining")
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
            emit(describe(item, prefix: "app: stored"))
            if let count, total >= count { signal.finish() }
          } else {
            emit("app: already stored \(item.id)")
          }
        }
        return .timedOut  // not reached: run only ends by throwing
      }
      group.addTask {
        for await failure in done { return .writeFailed(failure) }
        return .counted
      }
      if let timeout {
        group.addTask {
          try await Task.sleep(for: timeout)
          return .timedOut
        }
      }
      let first = try await group.next() ?? .timedOut
      group.cancelAll()
      signal.finish()
      return first
    }
    if case .writeFailed(let failure) = ending {
      await importer.center.close()
      throw failure
    }
    let totals = importer.totals
    try StandardOutput.writeLine(summary(totals))
    await importer.center.close()
    if count != nil, case .timedOut = ending { throw ExitCode(2) }
    if !totals.setAside.isEmpty || !totals.rejected.isEmpty { throw ExitCode(3) }
  }

  /// The closing line, `app: imported N, dropped M duplicate URLs` and what was set aside
  /// or rejected; each share set aside or rejected is named on standard error first.
  static func summary(_ totals: PendingImporter.DrainReport) -> String {
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
    return line
  }

  /// Runs `readlater list`.
  public static func list(_ arguments: ParsedArguments) throws {
    let group = try ShareExtensionTool.group(from: arguments)
    let container: GroupContainer
    do {
      container = try GroupContainer(identifier: group)
    } catch {
      throw ToolError(
        .containerUnavailable, "cannot open the container of \(group): \(error.message)",
        cause: error)
    }
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
