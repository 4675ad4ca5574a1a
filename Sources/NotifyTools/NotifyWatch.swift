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
      time (seconds since the epoch), the token, the poster's bus name, its sequence number \
      and whether the line stands for posts possibly missed (the bus was down, or dropped \
      posts while this watcher did not read: Protocol/notify.md, "Missed posts"); with -v \
      notifyutil's verbose format, [token] sec.mmm name state type. Posts that arrive \
      faster than they are printed coalesce.
      """,
    version: notifyBusVersion,
    arguments: [
      ArgumentDescription(
        "name", abstract: "A notification name to watch.", isOptional: true, isRepeating: true)
    ],
    options: [
      busOption,
      .option("--count", "-n", value: "n", abstract: "Exit after this many deliveries."),
      .option("--timeout", "-t", value: "seconds", abstract: "Give up after this many seconds."),
      .option(
        "--prefix", value: "namespace", abstract: "Also watch every name in this namespace.",
        isRepeatable: true),
      .flag("--json", abstract: "Print one JSON object per delivery."),
      .flag("--verbose", "-v", abstract: "Print notifyutil's verbose format."),
    ],
    exitStatuses: [
      .init(.success, "--count deliveries were printed."),
      .init(.failure, "No bus could be reached, or the connection was lost."),
      .init(.timedOut, "--timeout passed before --count deliveries."),
      .init(.validationFailure, "An argument was invalid, such as a malformed name."),
    ])

  /// Runs the command with parsed arguments.
  public static func run(_ arguments: ParsedArguments) async throws {
    let names = try names(arguments.values("name"))
    let prefixes = arguments.values("--prefix")
    guard !names.isEmpty || !prefixes.isEmpty else {
      throw CommandLineError.validation("Give at least one name or --prefix to watch.")
    }
    let count = try arguments.value("--count", as: UInt.self)
    let timeout = try arguments.value("--timeout", as: Double.self)
    if let timeout, !(timeout >= 0) || !timeout.isFinite {
      throw CommandLineError.validation("--timeout must be a number of seconds, not '\(timeout)'.")
    }
    let json = arguments.contains("--json")
    let verbose = arguments.contains("--verbose")
    let center = try await connect(try bus(from: arguments))

    let events: NotifyEvents
    do {
      events = try await center.events(for: names, inNamespaces: prefixes, bufferSize: 256)
    } catch {
      throw CommandLineError.validation(error.message)
    }

    let outcome: ExitCode? = await withTaskGroup(of: ExitCode?.self) { group in
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
          do {
            try StandardOutput.writeLine(line)
          } catch {
            return .failure
          }
          printed += 1
          if let count, printed == count { return .success }
        }
        return nil
      }
      if let timeout {
        group.addTask {
          try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
          return .timedOut
        }
      }
      group.addTask {
        for await state in await center.connection.stateChanges() where state == .closed {
          return .failure
        }
        return nil
      }
      var result: ExitCode?
      while let next = await group.next() {
        if let next {
          result = next
          break
        }
      }
      group.cancelAll()
      return result
    }
    await center.close()
    if let outcome, outcome != .success { throw outcome }
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
