public import DBus

/// An application's id, as the Desktop Entry Specification uses it: a reverse-DNS D-Bus
/// well-known name such as `org.notifybus.ReadLater`, which is also the desktop file's name
/// (`org.notifybus.ReadLater.desktop`), the bus name the running application owns, and,
/// dots made slashes and dashes underscores, the path of its `org.freedesktop.Application`
/// object (`/org/notifybus/ReadLater`).
public struct ApplicationID: Hashable, Sendable, CustomStringConvertible,
  ExpressibleByStringLiteral
{
  /// The id, for example `org.notifybus.ReadLater`.
  public let rawValue: String

  /// Checks an id.
  ///
  /// - Throws: ``ActivationError`` with code ``ActivationError/Code/invalidID`` naming what
  ///   is wrong: the D-Bus well-known name rules (at least two elements of `[A-Za-z0-9_-]`,
  ///   none starting with a digit, at most 255 bytes).
  public init(_ text: String) throws(ActivationError) {
    if text.hasPrefix(":") {
      throw ActivationError(
        .invalidID, "'\(text)' is not an application id: a unique connection name")
    }
    if let problem = BusName.violation(in: text) {
      throw ActivationError(.invalidID, "'\(text)' is not an application id: \(problem)")
    }
    rawValue = text
  }

  /// An id known to be valid; traps otherwise (for literals).
  public init(stringLiteral value: String) {
    do {
      try self.init(value)
    } catch {
      preconditionFailure(error.message)
    }
  }

  /// The well-known name the running application owns.
  public var busName: BusName { BusName(unchecked: rawValue) }

  /// The path of the `org.freedesktop.Application` object: `/` and the id with `.` made
  /// `/` and `-` made `_`.
  public var objectPath: ObjectPath {
    var path = "/"
    for character in rawValue {
      switch character {
      case ".": path.append("/")
      case "-": path.append("_")
      default: path.append(character)
      }
    }
    return ObjectPath(unchecked: path)
  }

  /// The desktop file's name: the id and `.desktop`.
  public var desktopFileName: String { rawValue + ".desktop" }

  /// The D-Bus service file's name: the id and `.service`.
  public var serviceFileName: String { rawValue + ".service" }

  /// The id.
  public var description: String { rawValue }
}
