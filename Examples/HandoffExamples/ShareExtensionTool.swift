public import AppGroups
public import CommandLineSupport
import DBus
public import ExtensionItems
import Foundation
import Handoff
public import Notify
import NotifyToolsCore
import SystemSupport

/// `share-extension`: plays the share extension of the read-later example.
///
/// It builds one extension item from its options, checks it against its `Info.plist`
/// activation rule, stores it in the group's spool and posts the doorbell.
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
      Builds one extension item: --title is its title, and each --url, --text, --image and \
      --file is one attachment (files are typed from the uniform type graph by their \
      filename extension). The item is checked against the extension's Info.plist \
      activation rule (--rule seed: at most one web URL, one web page, and text, as in the \
      seed document; --rule images: the same and up to five images; or --manifest PATH). \
      An accepted item is stored in the group container's spool, files travelling as \
      attachment files, and the doorbell is posted.
      """,
    version: notifyBusVersion,
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
      .bus,
    ],
    exitStatuses: [
      .init(.success, "The item was stored and the doorbell posted."),
      .init(
        .failure,
        "The item could not be stored (or the request passed its time limit), or the doorbell "
          + "could not be posted."),
      .init(
        .validationFailure,
        "An argument was invalid (the message names it), or the activation rule refused the "
          + "item (the message names the rule)."),
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

  /// Runs the command with parsed arguments.
  public static func run(_ arguments: ParsedArguments) async throws {
    let group = try group(from: arguments)
    let notification = try notification(from: arguments)
    let bus = try arguments.bus() ?? .automatic
    let timeLimit: Duration
    do {
      timeLimit = try ExtensionContext.timeLimit()
    } catch {
      throw CommandLineError.validation(error.message)
    }
    let items = [try item(from: arguments)]
    let manifest = try manifest(from: arguments)
    guard let rule = manifest.activationRule else {
      throw CommandLineError.validation("The manifest has no NSExtensionActivationRule.")
    }
    if let refusal = ActivationCheck.refusal(for: items, rule: rule) {
      try? StandardError.writeLine("share-extension: refused by the activation rule: \(refusal)")
      throw ExitCode.validationFailure
    }
    let sender = try await HandoffSender.connect(
      group: group.rawValue, notification: notification.rawValue, bus: bus)
    let context = ExtensionContext(inputItems: items, sender: sender, timeLimit: timeLimit)
    let id = try await context.completeRequest(returningItems: context.inputItems)
    try StandardOutput.writeLine(
      "extension: stored share \(id ?? "-") (\(summary(items[0]))) and posted "
        + "'\(sender.notification)'")
  }

  /// The extension item the options describe.
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
        let absolute = absolutePath(path)
        // Refused before anything is stored: a FIFO would block the read, a device
        // (/dev/zero) would never end, a directory has no bytes.
        do {
          _ = try FileDescriptor<FileSystemError>.openRegularFile(absolute)
        } catch {
          throw CommandLineError.validation("\(option): \(error).")
        }
        let provider = ItemProvider(fileAtPath: absolute)
        if option == "--image", !provider.hasItemConforming(to: .image) {
          throw CommandLineError.validation(
            "--image: '\(path)' is \(provider.registeredTypes[0]), not an image; use --file.")
        }
        attachments.append(provider)
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
