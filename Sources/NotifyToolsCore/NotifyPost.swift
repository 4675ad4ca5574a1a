public import CommandLineSupport
import DBusCore
import NotifyCore

/// `notify-post`: posts notification names.
public enum NotifyPost {
  /// The command line.
  public static let command = CommandDescription(
    name: "notify-post",
    abstract: "Post notifications by name.",
    discussion: """
      Posts each NAME, in order, to every process watching it on the bus, then waits until \
      the bus has routed them. With --state, sets each name's 64-bit state first (this \
      needs notifyd). With --mediated (the default with --bus system), asks notifyd to \
      post each name, so a refusal is reported. Buses are reached over Unix sockets \
      (unix:path= and unix:abstract= addresses).
      """,
    version: notifyBusVersion,
    arguments: [
      ArgumentDescription(
        "name", abstract: "A notification name, such as group.example.saved.", isRepeating: true)
    ],
    options: [
      .bus,
      .option(
        "--state", value: "n",
        abstract: "Set each name's state to this unsigned 64-bit value before posting."),
      .flag(
        "--mediated",
        abstract: "Post through notifyd, which checks access (always on with --bus system)."),
    ],
    exitStatuses: [
      .init(.success, "Every name was posted."),
      .init(
        .failure,
        "No bus could be reached, or notifyd refused or is missing for --state or --mediated."),
      .init(
        .validationFailure,
        "An argument was invalid, such as a malformed name or an argument that is not UTF-8."),
    ],
    environment: CommandDescription.Entry.busEnvironment,
    files: CommandDescription.Entry.busFiles,
    examples: [
      .init("notify-post group.example.saved", "Post one name on the automatic bus:"),
      .init(
        "notify-post --state 42 com.example.level",
        "Set a name's state, then post it (notifyd must be running):"),
      .init(
        "notify-post --bus system --mediated com.example.ready",
        "Post through notifyd on the system bus, so its access rules apply:"),
    ],
    seeAlso: ["notify-watch(1)", "notifyutil(1)", "notifyd(8)"])

  /// Runs the command with parsed arguments.
  ///
  /// It speaks D-Bus through a ``OneShotConnection``: no libdbus, no threads, and one write
  /// and one round trip with the bus for all the names, so posting costs little more than
  /// process start-up.
  public static func run(_ arguments: ParsedArguments) throws {
    let names = try names(arguments.values("name"))
    let state = try arguments.value("--state", as: UInt64.self)
    let bus = try arguments.bus() ?? .automatic
    let mediated = arguments.contains("--mediated") || bus == .system
    let connection: OneShotConnection
    do {
      connection = try OneShotConnection(to: bus)
    } catch {
      throw ToolError("cannot reach the \(bus) bus: \(error.message)")
    }
    /// Asks notifyd; a failure of the connection is the bus's, an error reply notifyd's.
    func ask(_ call: Message, _ failure: String) throws {
      let reply: Message
      do {
        reply = try connection.reply(to: call, timeoutMilliseconds: 10_000)
      } catch  where error.name == .noReply {
        throw ToolError(failure + "notifyd did not answer within 10 s")
      } catch {
        throw ToolError("cannot reach the \(bus) bus: \(error.message)")
      }
      if let error = reply.error {
        throw ToolError(failure + NotifyWire.error(fromService: error).message)
      }
    }
    var counts = PostCounts(capacity: names.count)
    for (sequence, name) in names.enumerated() {
      if let state {
        try ask(NotifyWire.setState(name, state), "cannot set the state of '\(name)': ")
      }
      if mediated {
        try ask(NotifyWire.mediatedPost(name), "cannot post '\(name)' through notifyd: ")
        continue
      }
      try connection.send(
        NotifyWire.signal(
          for: name, sequence: UInt64(sequence + 1), nameSequence: counts.next(for: name)))
    }
    do {
      try connection.flush()
    } catch {
      throw ToolError("cannot reach the \(bus) bus: \(error.message)")
    }
  }
}
