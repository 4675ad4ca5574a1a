public import AppGroups
public import CommandLineSupport
public import ComposeSheet
import DBus
public import ExtensionItems
import Foundation
import Handoff
public import Notify
import NotifyToolsCore
import Synchronization
import SystemSupport

extension ExitCode {
  /// `share-extension`: Cancel was pressed in the compose sheet; nothing was stored.
  public static let cancelled = ExitCode(3)
  /// `share-extension`: a file to share is a directory, a FIFO, a device or a socket.
  ///
  /// `<sysexits.h>` has no class for a file that exists but is not a file's content:
  /// `EX_NOINPUT` (66) is a file that is missing or unreadable, `EX_DATAERR` (65) content
  /// that was read and refused, `EX_IOERR` (74) an I/O error, and none happened: the file is
  /// refused before it is opened for reading. So it is a tool-specific status.
  public static let notARegularFile = ExitCode(4)
}

/// `share-extension`: plays the share extension of the read-later example.
///
/// It builds one extension item from its options and arguments (files and URLs, as a file
/// manager passes them), checks it against its `Info.plist` activation rule, shows the
/// compose sheet on a terminal, stores the item in the group's spool and posts the doorbell.
/// `--desktop-entry` prints the desktop entry that puts it in file managers' "Open With".
public enum ShareExtensionTool {
  /// The group the example's extension and app share.
  public static let defaultGroup = "group.example.readlater"
  /// The doorbell the example rings.
  public static let defaultNotification = "group.example.saved"

  /// What the example tools read from the environment: the groups directory and the bus.
  static let environment: [CommandDescription.Entry] =
    [
      .init(
        "NOTIFYBUS_GROUPS_DIR",
        "The directory holding App Group containers (default $XDG_DATA_HOME/notifybus/groups).")
    ] + CommandDescription.Entry.busEnvironment

  /// The command line.
  public static let command = CommandDescription(
    name: "share-extension",
    abstract: "Share a URL, text, images or files with the read-later app.",
    discussion: """
      Builds one extension item: --title is its title, and each --url, --text, --image, \
      --file and argument is one attachment. An argument is a path, a file:// URL or an \
      http(s) URL, as a file manager's Open With passes them; files are typed from the \
      uniform type graph by their filename extension, and by their content where the \
      extension is missing or wrong. The item is checked against the extension's Info.plist \
      activation rule (--rule seed: at most one web URL, one web page, and text, as in the \
      seed document; --rule images: the same and up to five images; or --manifest PATH).

      On a terminal (standard input and output both), or with --compose, the compose \
      sheet shows the item and an editable text; Post (Enter) stores it with the text as \
      its content text, refused while the text is empty; Cancel (Escape) stores nothing \
      and exits with status 3. Elsewhere, or with --no-compose, the item is stored at once.

      An accepted item is stored in the group container's spool, files travelling as \
      attachment files, and the doorbell is posted. --desktop-entry prints the desktop \
      entry of the Info.plist instead (Protocol/desktop-entries.md).
      """,
    version: notifyBusVersion,
    arguments: [
      .init(
        "item", abstract: "A file (a path or a file:// URL) or an http(s) URL to share.",
        isOptional: true, isRepeating: true)
    ],
    options: [
      .option("--url", value: "url", abstract: "A web URL to share.", isRepeatable: true),
      .option("--title", value: "text", abstract: "The item's title."),
      .option("--text", value: "text", abstract: "Text to share.", isRepeatable: true),
      .option("--image", value: "path", abstract: "An image file to share.", isRepeatable: true)
        .with { $0.completion = .file },
      .option("--file", value: "path", abstract: "Any file to share.", isRepeatable: true)
        .with { $0.completion = .file },
      .option(
        "--rule", value: "name", abstract: "The built-in Info.plist to check against.",
        default: "seed", choices: ShareManifests.Choice.allCases.map(\.rawValue)),
      .option("--manifest", value: "path", abstract: "An Info.plist to check against instead.")
        .with { $0.completion = .file },
      .option("--group", value: "id", abstract: "The App Group.", default: defaultGroup),
      .option(
        "--notification", value: "name", abstract: "The name to post.",
        default: defaultNotification),
      .flag("--compose", abstract: "Show the compose sheet, on /dev/tty when not on a terminal."),
      .flag("--no-compose", abstract: "Store without the compose sheet, even on a terminal."),
      .flag(
        "--desktop-entry",
        abstract: "Print the desktop entry of the Info.plist instead of sharing."),
      .option(
        "--exec", value: "path",
        abstract: "With --desktop-entry: the executable Exec= runs (default: this one)."
      )
      .with { $0.completion = .file },
      .bus,
    ],
    exitStatuses: [
      .init(.success, "The item was stored and the doorbell posted."),
      .init(
        .failure,
        "The item could not be stored (or the request passed its time limit), the doorbell "
          + "could not be posted, or the installed app did not open readlater://import (the "
          + "share is stored then)."),
      .init(.cancelled, "Cancel was pressed in the compose sheet: nothing was stored."),
      .init(
        .notARegularFile,
        "A file to share is a directory, a FIFO, a device or a socket: nothing was stored."),
      .init(
        .validationFailure,
        "Bad usage (EX_USAGE): a bad option, a malformed argument, or a URL with a scheme "
          + "other than file, http or https; the message names it. Nothing was stored."),
      .init(
        .dataError,
        "The activation rule refused the item (EX_DATAERR); the message names the rule's "
          + "key. Nothing was stored."),
      .init(
        .noInput,
        "A file to share does not exist or cannot be read (EX_NOINPUT): nothing was stored."),
    ],
    environment: ShareExtensionTool.environment + [
      .init(
        ExtensionContext.timeLimitEnvironmentVariable,
        "The extension request's time limit in seconds (default 30): past it the request is "
          + "cancelled, loads in flight end and nothing is stored.")
    ],
    files: [
      .init(
        "$XDG_DATA_HOME/notifybus/groups/GROUP/",
        "The group container; shares are stored in its spool until the app drains them.")
    ],
    examples: [
      .init(
        "share-extension --url https://example.com/ --title Example",
        "Share a web page with the read-later app:"),
      .init(
        "share-extension --rule images --image photo.png --text 'Look at this'",
        "Share an image and text, checked against the images rule:"),
      .init(
        "share-extension --rule images file:///tmp/photo.png https://example.com/",
        "Share what a file manager passes (typed by name and content):"),
      .init(
        "share-extension --desktop-entry --rule images --exec /usr/bin/share-extension",
        "Print the desktop entry of the images rule:"),
    ],
    seeAlso: ["readlater(1)", "notify-post(1)"])

  /// `--group`, checked: an identifier such as `group.example.readlater`.
  ///
  /// - Throws: ``CommandLineError`` naming `--group` and what is wrong with the value.
  public static func group(from arguments: ParsedArguments) throws(CommandLineError)
    -> GroupIdentifier
  {
    let text = arguments.value("--group") ?? defaultGroup
    do {
      return try GroupIdentifier(validating: text)
    } catch {
      throw CommandLineError.validation("--group: \(error.message)")
    }
  }

  /// `--notification`, checked: a notification name such as `group.example.saved`.
  ///
  /// - Throws: ``CommandLineError`` naming `--notification` and what is wrong with the value.
  public static func notification(from arguments: ParsedArguments) throws(CommandLineError)
    -> NotifyName
  {
    let text = arguments.value("--notification") ?? defaultNotification
    do {
      return try NotifyName(text)
    } catch {
      throw CommandLineError.validation("--notification: \(error.message)")
    }
  }

  /// Runs the command with parsed arguments, without a compose sheet.
  public static func run(_ arguments: ParsedArguments) async throws {
    try await run(arguments, terminal: { _ in nil })
  }

  /// Runs the command with parsed arguments.
  ///
  /// - Parameters:
  ///   - arguments: The parsed command line.
  ///   - terminal: Opens the terminal the compose sheet is shown on: called with `true` for
  ///     `--compose` (use `/dev/tty` when the standard streams are not a terminal; throw when
  ///     there is none), `false` otherwise (return `nil` when the standard streams are not
  ///     both a terminal). Not called with `--no-compose`.
  public static func run(
    _ arguments: ParsedArguments,
    terminal: (_ forced: Bool) throws -> (any ShareComposer)?
  ) async throws {
    if arguments.contains("--desktop-entry") {
      let sharing = [
        "--url", "--title", "--text", "--image", "--file", "--compose", "--no-compose",
      ]
      if let option = sharing.first(where: arguments.contains) {
        throw CommandLineError.validation("--desktop-entry shares nothing: drop \(option).")
      }
      if let item = arguments.values("item").first {
        throw CommandLineError.validation("--desktop-entry shares nothing: drop '\(item)'.")
      }
      try StandardOutput.write(try desktopEntry(from: arguments).text)
      return
    }
    if arguments.contains("--exec") {
      throw CommandLineError.validation("--exec is used with --desktop-entry only.")
    }
    if arguments.contains("--compose") && arguments.contains("--no-compose") {
      throw CommandLineError.validation("--compose and --no-compose cannot be used together.")
    }
    let group = try group(from: arguments)
    let notification = try notification(from: arguments)
    let bus = try arguments.bus() ?? .automatic
    let timeLimit: Duration
    do {
      timeLimit = try ExtensionContext.timeLimit()
    } catch {
      throw CommandLineError.validation(error.message)
    }
    // The options first, then the attachments in order, then the rule: the first bad one
    // decides the status, and nothing is stored.
    let manifest = try manifest(from: arguments)
    guard let rule = manifest.activationRule else {
      throw CommandLineError.validation("The manifest has no NSExtensionActivationRule.")
    }
    var item: ExtensionItem
    do {
      item = try self.item(from: arguments)
    } catch let error as InputError {
      try? StandardError.writeLine("Error: \(error.message)")
      throw error.exitCode
    }
    if let refusal = ActivationCheck.refusal(
      for: [item], rule: rule, registry: manifest.typeRegistry)
    {
      try? StandardError.writeLine("share-extension: refused by the activation rule: \(refusal)")
      throw ExitCode.dataError
    }
    let connect: @Sendable () async throws -> HandoffSender = {
      try await HandoffSender.connect(
        group: group.rawValue, notification: notification.rawValue, bus: bus)
    }
    var composer: (any ShareComposer)?
    if !arguments.contains("--no-compose") {
      do {
        composer = try terminal(arguments.contains("--compose"))
      } catch {
        throw CommandLineError.validation("--compose: \(error)")
      }
    }
    let sender: HandoffSender
    if let composer {
      (item, sender) = try await compose(
        item, on: composer, heading: manifest.displayName ?? "Share", connect: connect)
    } else {
      sender = try await connect()
    }
    // The time limit runs from Post: the sheet waits for the user, not the request.
    let context = ExtensionContext(inputItems: [item], sender: sender, timeLimit: timeLimit)
    let id = try await context.completeRequest(returningItems: context.inputItems)
    try StandardOutput.writeLine(
      "extension: stored share \(id ?? "-") (\(summary(item))) and posted "
        + "'\(sender.notification)'")
    // As the seed's extension does after saving: open readlater://import?count=N.
    try StandardOutput.writeLine(try await ReadLaterApp.openImport(context))
  }

  /// Shows the compose sheet while the request connects, and returns the item with the
  /// posted text as its content text, and the connected sender.
  ///
  /// - Throws: ``ExitCode/cancelled`` after Cancel, which ends the request
  ///   (`cancelRequest(withError:)`) when it had connected; what `connect` throws.
  private static func compose(
    _ item: ExtensionItem, on composer: any ShareComposer, heading: String,
    connect: @escaping @Sendable () async throws -> HandoffSender
  ) async throws -> (ExtensionItem, HandoffSender) {
    let connected = ConnectedSender()
    let outcome = try await composer.compose(
      heading: heading, text: item.attributedContentText?.string ?? ""
    ) {
      let sender = try await connect()
      connected.value.withLock { $0 = sender }
      return preview(of: item)
    }
    switch (outcome, connected.value.withLock { $0 }) {
    case (.post(let text), let sender?):
      var posted = item
      posted.attributedContentText = AttributedText(text)
      return (posted, sender)
    case (_, let sender):
      // Cancelled, possibly while loading: the request ends and nothing is stored.
      if let sender {
        try ExtensionContext(inputItems: [item], sender: sender)
          .cancelRequest(withError: ShareCancelled())
      }
      try StandardOutput.writeLine("extension: cancelled; nothing was stored")
      throw ExitCode.cancelled
    }
  }

  /// The sender the compose sheet's loading connected, once it has.
  private final class ConnectedSender: Sendable {
    let value = Mutex<HandoffSender?>(nil)
  }

  /// The error `cancelRequest(withError:)` gets when Cancel is pressed.
  public struct ShareCancelled: Error, CustomStringConvertible {
    /// Creates the error.
    public init() {}
    /// What happened.
    public var description: String { "The user cancelled the share." }
  }

  /// The desktop entry `--desktop-entry` prints: of `--rule`'s or `--manifest`'s Info.plist,
  /// running `--exec` (default: this executable) with the same `--rule` or `--manifest`.
  public static func desktopEntry(from arguments: ParsedArguments) throws -> ExtensionDesktopEntry {
    let manifest = try manifest(from: arguments)
    var command = [arguments.value("--exec") ?? currentExecutable()]
    if let path = arguments.value("--manifest") {
      command += ["--manifest", absolutePath(path)]
    } else {
      command += ["--rule", arguments.value("--rule") ?? "seed"]
    }
    do {
      return try ExtensionDesktopEntry(manifest: manifest, command: command)
    } catch {
      throw CommandLineError.validation("--desktop-entry: \(error)")
    }
  }

  private static func currentExecutable() -> String {
    let path = CommandLine.arguments.first ?? "share-extension"
    if path.contains("/") { return URL(fileURLWithPath: path).standardizedFileURL.path }
    return path
  }

  /// What the compose sheet shows of an item: its title, first web URL and attachments.
  public static func preview(of item: ExtensionItem) -> ComposeSheet.Preview {
    var preview = ComposeSheet.Preview(title: item.attributedTitle?.string)
    for provider in item.attachments {
      guard let representation = provider.representations.first else { continue }
      let type = representation.type.identifier
      switch representation.content {
      case .url(let url):
        if preview.url == nil, !url.isFileURL { preview.url = url.absoluteString }
        preview.attachments.append("\(url.absoluteString) (\(type))")
      case .text(let text):
        let shown = text.count > 60 ? String(text.prefix(60)) + "..." : text
        preview.attachments.append("\"\(shown)\" (\(type))")
      case .file(let path):
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? Int
        let name = provider.suggestedName ?? URL(fileURLWithPath: path).lastPathComponent
        preview.attachments.append("\(name) (\(type), \(size ?? 0) bytes)")
      case .data(let data):
        preview.attachments.append("\(data.count) bytes (\(type))")
      }
    }
    return preview
  }

  /// A file to share that is missing, unreadable or not a regular file: not a usage mistake,
  /// so it is reported as `Error: <message>` without the usage, with its own status.
  public struct InputError: Error, CustomStringConvertible {
    /// ``ExitCode/noInput`` or ``ExitCode/notARegularFile``.
    public var exitCode: ExitCode
    /// The option or argument and what is wrong with it, ending with a full stop.
    public var message: String

    /// The error for an argument that cannot be shared, or `nil` when the argument itself is
    /// wrong (empty, malformed, an unknown scheme): that is a ``CommandLineError``.
    init?(_ error: SharedArgumentError, prefix: String) {
      switch error.code {
      case .empty, .malformed, .unknownScheme: return nil
      case .missing, .unreadable: exitCode = .noInput
      case .notARegularFile: exitCode = .notARegularFile
      }
      message = prefix + "\(error)."
    }

    /// The message.
    public var description: String { message }
  }

  /// The refusal of an argument: an ``InputError`` for a file that cannot be shared, else a
  /// usage error.
  private static func refusal(_ error: SharedArgumentError, prefix: String = "") -> any Error {
    InputError(error, prefix: prefix) ?? CommandLineError.validation(prefix + "\(error).")
  }

  /// The extension item the options describe.
  ///
  /// - Throws: ``CommandLineError`` for a malformed option or argument, ``InputError`` for a
  ///   file that is missing, unreadable or not a regular file; the first bad attachment
  ///   (`--url`, `--text`, `--image`, `--file`, then the arguments) decides.
  public static func item(from arguments: ParsedArguments) throws -> ExtensionItem {
    var attachments: [ItemProvider] = []
    for text in arguments.values("--url") {
      guard let url = URL(string: text), url.scheme != nil else {
        throw CommandLineError.validation("--url: '\(text)' is not an absolute URL.")
      }
      attachments.append(ItemProvider(url: url))
    }
    for text in arguments.values("--text") { attachments.append(ItemProvider(text: text)) }
    for option in ["--image", "--file"] {
      for path in arguments.values(option) {
        // Refused before anything is stored: a FIFO would block the read, a device
        // (/dev/zero) would never end, a directory has no bytes.
        let provider: ItemProvider
        do {
          provider = try SharedArgument.file(path: absolutePath(path)).provider()
        } catch {
          throw refusal(error, prefix: "\(option): ")
        }
        if option == "--image", !provider.hasItemConforming(to: .image) {
          throw CommandLineError.validation(
            "--image: '\(path)' is \(provider.registeredTypes[0]), not an image; use --file.")
        }
        attachments.append(provider)
      }
    }
    let directory = FileManager.default.currentDirectoryPath
    for text in arguments.values("item") {
      do {
        attachments.append(
          try SharedArgument(parsing: text, currentDirectory: directory).provider())
      } catch {
        throw refusal(error)
      }
    }
    return ExtensionItem(
      attributedTitle: arguments.value("--title").map { AttributedText($0) },
      attachments: attachments)
  }

  private static func manifest(from arguments: ParsedArguments) throws -> ExtensionManifest {
    if let path = arguments.value("--manifest") {
      do {
        return try ExtensionManifest(contentsOf: URL(fileURLWithPath: path))
      } catch {
        throw CommandLineError.validation("--manifest: \(error)")
      }
    }
    let name = arguments.value("--rule") ?? "seed"
    guard let choice = ShareManifests.Choice(rawValue: name) else {
      throw CommandLineError.validation("--rule: unknown rule '\(name)'.")
    }
    return ShareManifests.manifest(choice)
  }

  /// "1 URL, 1 text, 1 image" for the confirmation line.
  static func summary(_ item: ExtensionItem) -> String {
    var counts: [(String, Int)] = [("URL", 0), ("text", 0), ("image", 0), ("file", 0)]
    for provider in item.attachments {
      let index =
        provider.hasItemConforming(to: .url)
        ? 0
        : provider.hasItemConforming(to: .text) ? 1 : provider.hasItemConforming(to: .image) ? 2 : 3
      counts[index].1 += 1
    }
    let parts = counts.filter { $0.1 > 0 }.map {
      "\($0.1) \($0.0)\($0.1 > 1 && $0.0 != "text" ? "s" : "")"
    }
    return parts.isEmpty ? "no attachments" : parts.joined(separator: ", ")
  }
}
