public import CommandLineSupport
import DBus
import NotifyCore
import NotifyToolsCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// `notifybus`: which bus the tools use and why, what notifyd on it holds, and the
/// embedded bus's address for other D-Bus tools.
public enum NotifyBusTool {
  /// The subcommands, in the order the help lists them.
  static let subcommands: [CommandDescription] = [
    CommandDescription(
      name: "env",
      abstract: "Print DBUS_SESSION_BUS_ADDRESS for the bus the tools use, for eval.",
      discussion: """
        Starts the embedded bus when it is the one chosen and is not running. After \
        eval "$(notifybus env)", dbus-send --session, gdbus ... --session, busctl --user \
        and dbus-monitor --session reach the same bus as the NotifyBus tools. Post with \
        --session, not --address: with --address, dbus-send and gdbus send before \
        registering on the bus, which drops their signal.
        """,
      options: [.bus]),
    CommandDescription(
      name: "status",
      abstract: "Show which bus the tools use and why, and whether notifyd runs.",
      discussion: "Starts neither the embedded bus nor notifyd.",
      options: [.bus, .flag("--json", abstract: "Print one JSON object.")]),
    CommandDescription(
      name: "names",
      abstract: "List the names notifyd holds, with their state and last changes.",
      discussion: "Starts notifyd by D-Bus activation when it is not running.",
      options: [.bus, .flag("--json", abstract: "Print one JSON array.")]),
    CommandDescription(
      name: "interface",
      abstract: "Print the D-Bus interface a name's Posted signal travels on.",
      arguments: [ArgumentDescription("name", abstract: "A notification name.")]),
    CommandDescription(
      name: "stop",
      abstract: "Stop the embedded bus the tools started, and the notifyd it started."),
  ]

  /// The command line.
  public static let command = CommandDescription(
    name: "notifybus",
    abstract: "Find and inspect the bus the NotifyBus tools use.",
    discussion: """
      The bus is chosen as every tool chooses it: NOTIFYBUS_BUS_ADDRESS, else the session \
      bus (DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus, else /run/user/UID/bus) \
      when it answers, else the embedded bus, which the tools start on demand.
      """,
    version: notifyBusVersion,
    subcommands: subcommands,
    environment: CommandDescription.Entry.busEnvironment,
    files: CommandDescription.Entry.busFiles,
    examples: [
      .init(#"eval "$(notifybus env)""#, "Let dbus-send, gdbus and busctl reach the tools' bus:"),
      .init("notifybus status --json", "Which bus, why, and what notifyd does, as JSON:"),
      .init(
        #"dbus-send --session --type=signal /org/notifybus/Notify1 "$(notifybus interface a.b).Posted" string:a.b"#,
        "Post a.b by hand:"),
    ],
    seeAlso: ["notifyd(8)", "notifyutil(1)", "dbus-send(1)", "busctl(1)"])

  /// Runs a parsed `notifybus` command line.
  public static func run(_ arguments: ParsedArguments) async throws {
    // env, status and names take --bus; the others do not declare it.
    func bus() throws(CommandLineError) -> Bus { try arguments.bus() ?? .automatic }
    switch arguments.command.name {
    case "env":
      let report = try await BusReport.resolve(try bus(), startingEmbedded: true)
      await report.connection?.close()
      try StandardOutput.write(environmentText(report.address))
    case "status":
      let report = try await BusReport.resolve(try bus(), startingEmbedded: false)
      let notifyd = await report.notifyd()
      await report.connection?.close()
      try StandardOutput.write(
        arguments.contains("--json")
          ? statusJSON(report, notifyd) + "\n" : statusText(report, notifyd))
    case "names":
      let report = try await BusReport.resolve(try bus(), startingEmbedded: true)
      guard let connection = report.connection else {
        throw ToolError(.busUnreachable, "no bus answers")
      }
      let rows: [NameRow]
      do throws(DBusError) {
        let reply = try await connection.call(NotifyWire.serviceCall("DescribeNames", []))
        rows = NameRow.rows(in: reply)
      } catch {
        await connection.close()
        let failure = NotifyWire.error(fromService: error)
        throw ToolError(
          .serviceFailed, "cannot list notifyd's names on \(report.address): \(failure.message)",
          cause: failure)
      }
      await connection.close()
      try StandardOutput.write(
        arguments.contains("--json") ? namesJSON(rows) + "\n" : namesText(rows))
    case "interface":
      let name = try names(arguments.values("name"))[0]
      try StandardOutput.write(NotifyWire.interface(for: name).rawValue + "\n")
    case "stop":
      try StandardOutput.write(try stopEmbeddedBus())
    default:
      throw CommandLineError(
        .missingArgument, message: "Give a subcommand.", showsFullHelp: true)
    }
  }

  // MARK: - env

  /// `DBUS_SESSION_BUS_ADDRESS='...'; export DBUS_SESSION_BUS_ADDRESS;`, for sh, bash and zsh.
  static func environmentText(_ address: BusAddress) -> String {
    let quoted = "'" + address.rawValue.replacing("'", with: #"'\''"#) + "'"
    return "DBUS_SESSION_BUS_ADDRESS=\(quoted); export DBUS_SESSION_BUS_ADDRESS;\n"
  }

  // MARK: - status

  static func statusText(_ report: BusReport, _ notifyd: BusReport.Notifyd?) -> String {
    var lines = ["bus: \(report.address)", "  chosen: \(report.reason)"]
    for skipped in report.skipped {
      lines.append("  skipped: \(skipped.address): \(skipped.error)")
    }
    if report.isEmbedded {
      let pid = EmbeddedBus.processID.map { ", pid \($0)" } ?? ""
      lines.append(
        report.isRunning
          ? "  embedded bus: running\(pid), log \(EmbeddedBus.directory)/bus.log"
          : "  embedded bus: not running; the tools start it when they need it")
    }
    guard let notifyd else {
      lines.append("notifyd: unknown (the bus is not running)")
      return lines.joined(separator: "\n") + "\n"
    }
    guard let owner = notifyd.uniqueName else {
      lines.append(
        notifyd.isActivatable
          ? "notifyd: not running; the bus starts it on the first call"
          : "notifyd: not running, and the bus cannot start it: run 'notifyd &' (see notifyd(8))")
      return lines.joined(separator: "\n") + "\n"
    }
    let pid = notifyd.processID.map { "pid \($0), " } ?? ""
    lines.append("notifyd: running, \(pid)\(owner)")
    let statistics = notifyd.statistics
    if let file = statistics["StateFile"]?.stringValue {
      lines.append("  state file: \(file.isEmpty ? "none (--no-persist)" : file)")
    }
    if let names = statistics["Names"]?.uint64Value,
      let withState = statistics["NamesWithState"]?.uint64Value
    {
      let capacity = statistics["Capacity"]?.uint64Value.map { " of \($0)" } ?? ""
      lines.append("  names: \(names)\(capacity), \(withState) with a state")
    }
    if let start = statistics["StartTime"]?.uint64Value {
      lines.append("  started: \(rfc3339(nanoseconds: start))")
    }
    for bridge in bridgeRows(statistics["Bridges"]) {
      let broker = bridge["Broker"]?.stringValue ?? "?"
      let connected = bridge["Connected"]?.boolValue == true ? "connected" : "not connected"
      let counts = ["Published", "Received", "Queued", "Dropped", "Malformed"].map {
        "\($0.lowercased()) \(bridge[$0].map(jsonValue) ?? "0")"
      }
      var line = "  bridge \(broker): \(connected), " + counts.joined(separator: ", ")
      if let error = bridge["LastError"]?.stringValue, !error.isEmpty {
        line += "; last error: \(error)"
      }
      lines.append(line)
    }
    let counters = statistics.keys.sorted().filter {
      !["StateFile", "Names", "NamesWithState", "Capacity", "StartTime", "ProcessID", "Bridges"]
        .contains($0)
    }
    if !counters.isEmpty {
      lines.append(
        "  statistics: "
          + counters.map { "\($0) \(statistics[$0].map(jsonValue) ?? "")" }.joined(
            separator: ", "))
    }
    return lines.joined(separator: "\n") + "\n"
  }

  static func statusJSON(_ report: BusReport, _ notifyd: BusReport.Notifyd?) -> String {
    var bus = [
      "\"address\":\(json(report.address.rawValue))",
      "\"reason\":\(json(report.reason))",
      "\"embedded\":\(report.isEmbedded)",
      "\"running\":\(report.isRunning)",
    ]
    bus.append(
      "\"skipped\":["
        + report.skipped.map {
          "{\"address\":\(json($0.address.rawValue)),\"error\":\(json($0.error))}"
        }.joined(separator: ",") + "]")
    if report.isEmbedded {
      bus.append("\"embeddedDirectory\":\(json(EmbeddedBus.directory))")
      bus.append("\"embeddedProcessID\":\(EmbeddedBus.processID.map(String.init) ?? "null")")
    }
    var daemon = ["\"running\":\(notifyd?.uniqueName != nil)"]
    if let notifyd {
      daemon.append("\"activatable\":\(notifyd.isActivatable)")
      daemon.append("\"uniqueName\":\(notifyd.uniqueName.map(json) ?? "null")")
      daemon.append("\"processID\":\(notifyd.processID.map(String.init) ?? "null")")
      daemon.append(
        "\"statistics\":{"
          + notifyd.statistics.sorted { $0.key < $1.key }.map {
            "\(json($0.key)):\(jsonValue($0.value))"
          }
          .joined(separator: ",") + "}")
    }
    return
      "{\"bus\":{\(bus.joined(separator: ","))},\"notifyd\":{\(daemon.joined(separator: ","))}}"
  }

  // MARK: - names

  /// One row of `DescribeNames`.
  struct NameRow: Equatable {
    var name: String
    var state: UInt64
    var setTime: UInt64
    var posts: UInt64
    var lastPostTime: UInt64

    static func rows(in reply: Message) -> [NameRow] {
      guard case .array(_, let values)? = reply.body.first else { return [] }
      return values.compactMap { value in
        guard case .structure(let fields) = value, fields.count == 5,
          let name = fields[0].stringValue, let state = fields[1].uint64Value,
          let setTime = fields[2].uint64Value, let posts = fields[3].uint64Value,
          let lastPost = fields[4].uint64Value
        else { return nil }
        return NameRow(
          name: name, state: state, setTime: setTime, posts: posts, lastPostTime: lastPost)
      }
    }
  }

  static func namesText(_ rows: [NameRow]) -> String {
    let table =
      [["NAME", "STATE", "STATE SET", "POSTS", "LAST POST"]]
      + rows.map {
        [
          $0.name, String($0.state), $0.setTime == 0 ? "-" : rfc3339(nanoseconds: $0.setTime),
          String($0.posts), $0.lastPostTime == 0 ? "-" : rfc3339(nanoseconds: $0.lastPostTime),
        ]
      }
    var widths = [Int](repeating: 0, count: 5)
    for row in table {
      for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
    }
    return table.map { row in
      row.enumerated().map { index, cell in
        index == row.count - 1
          ? cell : cell + String(repeating: " ", count: widths[index] - cell.count)
      }.joined(separator: "  ")
    }.joined(separator: "\n") + "\n"
  }

  static func namesJSON(_ rows: [NameRow]) -> String {
    func time(_ nanoseconds: UInt64) -> String {
      nanoseconds == 0 ? "null" : json(rfc3339(nanoseconds: nanoseconds))
    }
    return "["
      + rows.map {
        "{\"name\":\(json($0.name)),\"state\":\($0.state),\"stateSet\":\(time($0.setTime)),"
          + "\"posts\":\($0.posts),\"lastPost\":\(time($0.lastPostTime))}"
      }.joined(separator: ",") + "]"
  }

  // MARK: - stop

  /// Stops the embedded bus: first the notifyd it runs (SIGTERM, so it writes its state),
  /// then the daemon; waits up to 5 s for each.
  static func stopEmbeddedBus() throws(ToolError) -> String {
    let socket = EmbeddedBus.socketPath
    guard EmbeddedBus.isAnswering(socket) else {
      return "no embedded bus is running at \(socket)\n"
    }
    var lines: [String] = []
    if let notifyd = notifydProcessID(on: EmbeddedBus.address) {
      kill(pid_t(notifyd), SIGTERM)
      guard waitUntil({ kill(pid_t(notifyd), 0) != 0 }) else {
        throw ToolError(
          .serviceFailed, "notifyd (pid \(notifyd)) did not stop within 5 s of SIGTERM")
      }
      lines.append("stopped notifyd (pid \(notifyd))")
    }
    let pid = EmbeddedBus.processID
    guard EmbeddedBus.stop(), waitUntil({ !EmbeddedBus.isAnswering(socket) }) else {
      throw ToolError(.busUnreachable, "the embedded bus at \(socket) did not stop")
    }
    lines.append("stopped the embedded bus\(pid.map { " (pid \($0))" } ?? "") at \(socket)")
    return lines.joined(separator: "\n") + "\n"
  }

  /// The pid of notifyd on the bus at `address`, asked with a blocking connection.
  static func notifydProcessID(on address: BusAddress) -> UInt32? {
    do throws(DBusError) {
      let connection = try OneShotConnection(to: .address(address))
      let reply = try connection.call(
        .methodCall(
          destination: .bus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
          member: "GetConnectionUnixProcessID", body: [.string(NotifyWire.service.rawValue)]),
        timeoutMilliseconds: 5000)
      return reply.body.first?.uint64Value.map { UInt32(truncatingIfNeeded: $0) }
    } catch {
      return nil
    }
  }

  /// Polls `condition` every 10 ms for 5 s.
  static func waitUntil(_ condition: () -> Bool) -> Bool {
    for _ in 0..<500 {
      if condition() { return true }
      usleep(10_000)
    }
    return condition()
  }

  // MARK: - Formatting

  static func json(_ text: String) -> String { NotifyWatch.jsonString(text) }

  /// A statistic as JSON: numbers as numbers, strings quoted, arrays and string-keyed
  /// dictionaries (the bridges' rows) as JSON arrays and objects.
  static func jsonValue(_ value: DBusValue) -> String {
    if let number = value.uint64Value { return String(number) }
    if let number = value.int64Value { return String(number) }
    if let flag = value.boolValue { return String(flag) }
    if let text = value.stringValue { return json(text) }
    switch value {
    case .variant(let inner):
      return jsonValue(inner)
    case .array(_, let elements):
      return "[" + elements.map(jsonValue).joined(separator: ",") + "]"
    case .dictionary(_, _, let entries):
      let members = entries.compactMap { entry in
        entry.key.stringValue.map { json($0) + ":" + jsonValue(entry.value) }
      }
      return "{" + members.joined(separator: ",") + "}"
    default:
      return "null"
    }
  }

  /// The rows of notifyd's `Bridges` statistic (`aa{sv}`), one per broker.
  static func bridgeRows(_ value: DBusValue?) -> [[String: DBusValue]] {
    var value = value
    if case .variant(let inner)? = value { value = inner }
    guard case .array(_, let rows)? = value else { return [] }
    return rows.compactMap { row in
      guard case .dictionary(_, _, let entries) = row else { return nil }
      var fields: [String: DBusValue] = [:]
      for entry in entries {
        guard let key = entry.key.stringValue else { continue }
        if case .variant(let inner) = entry.value {
          fields[key] = inner
        } else {
          fields[key] = entry.value
        }
      }
      return fields
    }
  }

  /// `2026-12-01T09:18:06Z`.
  static func rfc3339(nanoseconds: UInt64) -> String {
    var seconds = time_t(nanoseconds / 1_000_000_000)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
    return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
      + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
  }
}
