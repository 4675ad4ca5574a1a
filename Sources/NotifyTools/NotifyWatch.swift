public import CommandLineSupport
import DBus
import Notify
import NotifyToolsCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// `notify-watch`: prints a line per notification.
public enum NotifyWatch {
  /// The command line.
  public static let command = CommandDescription(
    name: "notify-watch",
    abstract: "Print a line for each notification posted under the given names.",
    discussion: """
      Each delivery is written as soon as it arrives, even when standard output is a pipe: \
      by default the name alone; with --json one JSON object per line with the name, the \
      time (seconds since the epoch), the token, postCount (how many posts of the name this \
      watcher has received, the first being 1), the poster's bus name, its sequence number \
      and whether the line stands for posts possibly missed (the bus was down, or dropped \
      posts while this watcher did not read: Protocol/notify.md, "Missed posts"); with -v \
      notifyutil's verbose format, [token] sec.mmm name state type. Posts that arrive \
      faster than they are printed coalesce.

      When the bus goes away, notify-watch says so on standard error and keeps trying to \
      reconnect, whether the bus was chosen automatically or with --bus; once back, it says \
      so, watches again and prints one resynchronization delivery per name, since posts may \
      have been missed meanwhile.
      """,
    version: notifyBusVersion,
    arguments: [
      ArgumentDescription(
        "name", abstract: "A notification name to watch.", isOptional: true, isRepeating: true)
    ],
    options: [
      .bus,
      .count("--count", "-n", abstract: "Exit after this many deliveries (at least 1)."),
      .timeout(
        "--timeout", "-t",
        abstract: "Give up after this many seconds (0 to \(Timeout.maximumSeconds))."),
      .option(
        "--prefix", value: "namespace", abstract: "Also watch every name in this namespace.",
        isRepeatable: true),
      .flag("--json", abstract: "Print one JSON object per delivery."),
      .flag("--verbose", "-v", abstract: "Print notifyutil's verbose format."),
    ],
    exitStatuses: [
      .init(.success, "--count deliveries were printed."),
      .init(
        .failure,
        "No bus could be reached at start, or standard output could not be written (the "
          + "error says why, such as a closed pipe when SIGPIPE is ignored)."),
      .init(.timedOut, "--timeout passed before --count deliveries."),
      .init(
        .validationFailure,
        "An argument was invalid, such as a malformed name, --count 0 or a --timeout out of "
          + "range."),
    ],
    environment: CommandDescription.Entry.busEnvironment,
    files: CommandDescription.Entry.busFiles,
    examples: [
      .init("notify-watch group.example.saved", "Print every post of one name until killed:"),
      .init(
        "notify-watch --count 1 --timeout 5 group.example.saved",
        "Wait at most 5 seconds for one post; the status says whether it came:"),
      .init(
        "notify-watch --json --prefix com.example",
        "Print every name in a namespace as JSON lines:"),
    ],
    seeAlso: ["notify-post(1)", "notifyutil(1)", "notifyd(8)"])

  /// Runs the command with parsed arguments.
  public static func run(_ arguments: ParsedArguments) async throws {
    let names = try names(arguments.values("name"))
    let prefixes = arguments.values("--prefix")
    guard !names.isEmpty || !prefixes.isEmpty else {
      throw CommandLineError.validation("Give at least one name or --prefix to watch.")
    }
    let count = try arguments.value("--count", as: Count.self)?.value
    let timeout = try arguments.value("--timeout", as: Timeout.self)?.duration
    let json = arguments.contains("--json")
    let verbose = arguments.contains("--verbose")
    let center = try await connect(try arguments.bus() ?? .automatic)

    let events: NotifyEvents
    do {
      events = try await center.events(for: names, inNamespaces: prefixes, bufferSize: 256)
    } catch {
      throw CommandLineError.validation(error.message)
    }

    let outcome: ExitCode?
    do {
      outcome = try await withThrowingTaskGroup(of: ExitCode?.self) { group in
        group.addTask {
          var printed = 0
          for await event in events {
            let line: String
            if json {
              line = jsonLine(event)
            } else if verbose {
              let state: String
              do throws(NotifyError) {
                state = String(try await center.state(of: event.name))
              } catch {
                state = ": Failed with code \(error.status.rawValue)"
              }
              line = "[\(event.token)] \(wallClockStamp()) \(event.name) \(state) events"
            } else {
              line = event.name.rawValue
            }
            // A failed write (EPIPE when SIGPIPE is ignored) ends the tool with its message.
            try StandardOutput.writeLine(line)
            printed += 1
            if let count, printed == count { return .success }
          }
          return nil
        }
        if let timeout {
          group.addTask {
            try? await Task.sleep(for: timeout)
            return .timedOut
          }
        }
        group.addTask {
          await reportConnection(of: center)
          return nil
        }
        defer { group.cancelAll() }
        while let next = try await group.next() {
          if let next { return next }
        }
        return nil
      }
    } catch {
      await center.close()
      throw error
    }
    await center.close()
    if let outcome, outcome != .success { throw outcome }
  }

  /// Says on standard error when the bus goes away and when it is back, until cancelled.
  static func reportConnection(of center: NotifyCenter) async {
    var lost = false
    for await state in await center.connection.stateChanges() {
      let address = await center.connection.address?.rawValue ?? "the bus"
      switch state {
      case .reconnecting where !lost:
        lost = true
        try? StandardError.writeLine("notify-watch: lost the bus at \(address); reconnecting")
      case .connected where lost:
        lost = false
        try? StandardError.writeLine(
          "notify-watch: reconnected to \(address); watching again (posts meanwhile may be lost)")
      default:
        break
      }
    }
  }

  /// One delivery as a JSON object on one line.
  static func jsonLine(_ event: NotifyEvent) -> String {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    let micros = spec.tv_nsec / 1000
    let digits = String(micros)
    let time = "\(spec.tv_sec).\(String(repeating: "0", count: 6 - digits.count))\(digits)"
    var fields = [
      "\"name\":\(jsonString(event.name.rawValue))",
      "\"time\":\(time)",
      "\"token\":\(event.token.rawValue)",
      "\"postCount\":\(event.postCount)",
    ]
    if let sender = event.sender { fields.append("\"sender\":\(jsonString(sender))") }
    if let sequence = event.sequence { fields.append("\"sequence\":\(sequence)") }
    fields.append("\"resynchronization\":\(event.isResynchronization)")
    return "{" + fields.joined(separator: ",") + "}"
  }

  /// A JSON string literal.
  static func jsonString(_ text: String) -> String {
    var result = "\""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": result += "\\\""
      case "\\": result += "\\\\"
      case "\n": result += "\\n"
      case "\r": result += "\\r"
      case "\t": result += "\\t"
      case _ where scalar.value < 0x20:
        let hex = String(scalar.value, radix: 16)
        result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
      default: result.unicodeScalars.append(scalar)
      }
    }
    return result + "\""
  }
}
