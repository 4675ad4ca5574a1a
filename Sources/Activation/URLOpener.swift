public import DBus
import Dispatch
public import Foundation
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// What ``URLOpener/open(_:on:directories:platformData:)`` did.
public struct URLOpening: Sendable, Hashable, CustomStringConvertible {
  /// How the URL reached its application.
  public enum Route: Sendable, Hashable {
    /// `org.freedesktop.Application.Open` over D-Bus to the application `id`; `started` is
    /// whether the bus started it for this call (D-Bus activation) rather than it running.
    case dbus(ApplicationID, started: Bool)
    /// The desktop's URL handler, this command (`gio open URL`, `xdg-open URL`), because
    /// the application is not D-Bus-activatable.
    case desktopHandler(command: String)
  }

  /// The URL opened.
  public var url: URL
  /// The desktop file id of the application that handles it.
  public var application: String
  /// How it went.
  public var route: Route

  /// "over D-Bus to org.notifybus.ReadLater, started by the bus".
  public var description: String {
    switch route {
    case .dbus(let id, let started):
      "over D-Bus to \(id), " + (started ? "started by the bus" : "already running")
    case .desktopHandler(let command):
      "with the desktop's handler (\(command)) for \(application)"
    }
  }
}

/// Opening a URL in the application that handles its scheme, as `NSExtensionContext`'s
/// `open(_:completionHandler:)` and `UIApplication.open(_:)` do.
///
/// ```swift
/// let opening = try await URLOpener.open(URL(string: "readlater://import?count=1")!,
///                                        on: connection)
/// print(opening)   // over D-Bus to org.notifybus.ReadLater, started by the bus
/// ```
///
/// The handler is the application ``ApplicationDirectories/handler(forScheme:)`` finds. A
/// `DBusActivatable=true` one is asked over D-Bus: `StartServiceByName` (the bus starts it
/// from its D-Bus service file when it is not running), then `Open([url], platform_data)`,
/// answered once the application handled the URL. Any other goes to the desktop's handler,
/// `gio open`, else `xdg-open`. Every failure is an ``ActivationError`` with its cause.
public enum URLOpener {
  /// Opens `url`.
  ///
  /// - Parameters:
  ///   - url: An absolute URL.
  ///   - connection: The bus the application runs on (the session bus).
  ///   - directories: Where applications are installed.
  ///   - platformData: `Open`'s `platform_data` (such as `activation-token`).
  /// - Returns: Which application and which way.
  /// - Throws: ``ActivationError``: ``ActivationError/Code/invalidURL``,
  ///   ``ActivationError/Code/noHandler``, ``ActivationError/Code/activationFailed``,
  ///   ``ActivationError/Code/requestFailed`` or ``ActivationError/Code/launcherFailed``.
  public static func open(
    _ url: URL, on connection: BusConnection,
    directories: ApplicationDirectories = .current, platformData: [String: DBusValue] = [:]
  ) async throws(ActivationError) -> URLOpening {
    let handler = try await self.handler(for: url, directories: directories)
    guard let id = handler.dbusID else {
      let command = try await launchDesktopHandler(url)
      return URLOpening(
        url: url, application: handler.desktopID, route: .desktopHandler(command: command))
    }
    let started: Bool
    do {
      let reply = try await connection.call(
        .methodCall(
          destination: .bus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
          member: "StartServiceByName", body: [.string(id.rawValue), .uint32(0)]),
        timeout: .seconds(120))
      started = reply.body.first?.uint64Value == 1
    } catch {
      throw ActivationError(
        .activationFailed,
        "Cannot start \(id) (\(handler.path)) to open \(url.absoluteString): \(error.message)",
        cause: .dbus(error))
    }
    do {
      _ = try await connection.call(
        ApplicationInterface.call(
          ApplicationInterface.open, to: id,
          body: [
            .array(elementType: "s", [.string(url.absoluteString)]), .dictionary(platformData),
          ]),
        timeout: .seconds(120))
    } catch {
      throw ActivationError(
        .requestFailed, "\(id) did not open \(url.absoluteString): \(error.message)",
        cause: .dbus(error))
    }
    return URLOpening(url: url, application: handler.desktopID, route: .dbus(id, started: started))
  }

  /// The application that would open `url`, found without opening anything: to refuse a
  /// URL no application handles before doing work for it.
  ///
  /// - Throws: ``ActivationError`` with code ``ActivationError/Code/invalidURL`` or
  ///   ``ActivationError/Code/noHandler``.
  public static func handler(for url: URL, directories: ApplicationDirectories = .current)
    async throws(ActivationError) -> InstalledApplication
  {
    guard let scheme = url.scheme, !scheme.isEmpty else {
      throw ActivationError(
        .invalidURL, "'\(url.absoluteString)' has no scheme, so no application opens it")
    }
    // The directories are read from disk: off the concurrency pool.
    let result = await withCheckedContinuation {
      (done: CheckedContinuation<Result<InstalledApplication, ActivationError>, Never>) in
      DispatchQueue.global().async {
        done.resume(
          returning: Result { () throws(ActivationError) in
            try directories.handler(forScheme: scheme)
          })
      }
    }
    return try result.get()
  }

  /// The desktop's handler: `gio open URL` when `gio` is on `PATH`, else `xdg-open URL`.
  ///
  /// - Returns: The command run.
  static func launchDesktopHandler(_ url: URL) async throws(ActivationError) -> String {
    let launcher = isOnPath("gio") ? ["gio", "open"] : ["xdg-open"]
    let command = (launcher + [url.absoluteString]).joined(separator: " ")
    let result = await withCheckedContinuation {
      (done: CheckedContinuation<Result<Subprocess.Termination, ActivationError>, Never>) in
      DispatchQueue.global().async {
        do throws(Errno) {
          let process = try Subprocess.spawn(
            launcher[0], arguments: Array(launcher.dropFirst()) + [url.absoluteString],
            captureOutput: false, captureError: true)
          let (_, error) = process.readToEnd(milliseconds: 60_000)
          let termination = process.wait()
          if termination == .exited(0) {
            done.resume(returning: .success(termination))
          } else {
            done.resume(
              returning: .failure(
                ActivationError(
                  .launcherFailed, "\(command) failed (\(termination)): \(error.trimmingSpaces)",
                  cause: .launcher(command: command, status: termination.description, output: error)
                )))
          }
        } catch {
          done.resume(
            returning: .failure(
              ActivationError(
                .launcherFailed,
                "Cannot run \(launcher[0]) to open \(url.absoluteString): \(error)",
                cause: .launcher(command: command, status: "not started", output: "\(error)"))))
        }
      }
    }
    _ = try result.get()
    return command
  }

  static func isOnPath(_ name: String) -> Bool {
    (Environment.value("PATH") ?? "/usr/bin:/bin").split(separator: ":").contains {
      access("\($0)/\(name)", X_OK) == 0
    }
  }
}
