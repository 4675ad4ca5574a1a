import DBus
import NotifyCore
import NotifyToolsCore

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Which bus the tools use and why, and what notifyd on it is doing: what `notifybus`
/// prints.
struct BusReport {
  /// The bus chosen.
  var address: BusAddress
  /// Why, in words (`the session bus, from DBUS_SESSION_BUS_ADDRESS`).
  var reason: String
  /// Buses tried before it that did not answer, with the error.
  var skipped: [(address: BusAddress, error: String)] = []
  /// Whether it is the embedded bus.
  var isEmbedded: Bool
  /// Whether something answers at the address.
  var isRunning: Bool
  /// The connection, when the bus answers.
  var connection: BusConnection?

  /// Resolves `bus` as the tools do, trying each candidate in turn.
  ///
  /// - Parameter startingEmbedded: Whether to start the embedded bus when it is the one
  ///   chosen and is not running (`env` does; `status` only reports).
  static func resolve(_ bus: Bus, startingEmbedded: Bool) async throws(ToolError) -> BusReport {
    let candidates: [Bus.Candidate]
    do {
      candidates = try bus.candidates()
    } catch {
      throw ToolError(.busUnreachable, error.message, cause: error)
    }
    var skipped: [(address: BusAddress, error: String)] = []
    for candidate in candidates {
      guard let address = candidate.address else {
        // The embedded bus, reached last.
        let reason = candidate.reason + ": the embedded bus"
        guard startingEmbedded || EmbeddedBus.isAnswering(EmbeddedBus.socketPath) else {
          return BusReport(
            address: EmbeddedBus.address, reason: reason, skipped: skipped, isEmbedded: true,
            isRunning: false)
        }
        do {
          let connection = try await BusConnection.connect(to: .embedded)
          return BusReport(
            address: EmbeddedBus.address, reason: reason, skipped: skipped, isEmbedded: true,
            isRunning: true, connection: connection)
        } catch {
          throw ToolError(
            .busUnreachable, "cannot start the embedded bus: \(error.message)", cause: error)
        }
      }
      do {
        let connection = try await BusConnection.connect(to: .address(address))
        return BusReport(
          address: address, reason: candidate.reason, skipped: skipped,
          isEmbedded: address == EmbeddedBus.address, isRunning: true, connection: connection)
      } catch {
        guard candidate.fallsThrough else {
          throw ToolError(
            .busUnreachable, "cannot reach \(candidate.reason) at \(address): \(error.message)",
            cause: error)
        }
        skipped.append((address, error.message))
      }
    }
    throw ToolError(.busUnreachable, "no bus to try")
  }

  /// What the bus says about notifyd.
  struct Notifyd {
    var uniqueName: String?
    var processID: UInt32?
    var isActivatable: Bool
    var statistics: [String: DBusValue] = [:]
  }

  /// Asks the bus whether notifyd runs, without starting it.
  func notifyd() async -> Notifyd? {
    guard let connection else { return nil }
    var names: [DBusValue] = []
    if case .array(_, let elements)? = try? await connection.call(
      busCall("ListActivatableNames")
    ).body.first {
      names = elements
    }
    var result = Notifyd(isActivatable: names.contains(.string(NotifyWire.service.rawValue)))
    guard let owner = try? await connection.owner(of: NotifyWire.service) else { return result }
    result.uniqueName = owner.rawValue
    result.processID = try? await connection.credentials(of: owner).processID
    var call = NotifyWire.serviceCall("GetStatistics", [])
    call.noAutoStart = true
    if let entries = try? await connection.call(call).body.first?.stringDictionary {
      result.statistics = entries
    }
    return result
  }

  /// A call to the bus itself.
  func busCall(_ member: MemberName) -> Message {
    .methodCall(
      destination: .bus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
      member: member)
  }
}
