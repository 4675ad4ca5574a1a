public import CommandLineSupport
import DBus
import Notify

/// `notify-post`: posts notification names.
public enum NotifyPost {
  /// The command line.
  public static let command = CommandDescription(
    name: "notify-post",
    abstract: "Post notifications by name.",
    discussion: """
      Posts each NAME, in order, to every process watching it on the bus, then waits until \
      the bus has routed them. With --state, sets each name's 64-bit state first (this \
      needs notifyd).
      """,
    version: notifyBusVersion,
    arguments: [
      ArgumentDescription(
        "name", abstract: "A notification name, such as group.example.saved.", isRepeating: true)
    ],
    options: [
      busOption,
      .option(
        "--state", value: "n",
        abstract: "Set each name's state to this unsigned 64-bit value before posting."),
    ],
    exitStatuses: [
      .init(.success, "Every name was posted."),
      .init(.failure, "No bus could be reached, or notifyd refused or is missing for --state."),
      .init(.validationFailure, "An argument was invalid, such as a malformed name."),
    ])

  /// Runs the command with parsed arguments.
  public static func run(_ arguments: ParsedArguments) async throws {
    let names = try names(arguments.values("name"))
    let state = try arguments.value("--state", as: UInt64.self)
    let center = try await connect(try bus(from: arguments))
    defer { Task { await center.close() } }
    do {
      for name in names {
        if let state { try await center.setState(state, for: name) }
        try center.post(name)
      }
      try await center.synchronize()
    } catch {
      throw ToolError(error.message)
    }
    await center.close()
  }
}
