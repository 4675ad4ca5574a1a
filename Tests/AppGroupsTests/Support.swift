import AppGroups
import Foundation
import Glibc
import Testing

/// A fresh directory under the system temporary directory, removed when dropped.
final class TemporaryDirectory: Sendable {
  let path: String

  init() {
    var template = Array("/tmp/appgroups-test-XXXXXX".utf8CString)
    let result = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(result != nil, "mkdtemp failed")
    path = String(
      decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  deinit { _ = try? FileManager.default.removeItem(atPath: path) }

  /// A container location under this directory, as `NOTIFYBUS_GROUPS_DIR` would give.
  var groups: String { path + "/groups" }

  func container(_ identifier: String = "group.com.example.tests") throws -> GroupContainer {
    try GroupContainer(identifier: GroupIdentifier(validating: identifier), groupsDirectory: groups)
  }
}

/// The permission bits of a path, not following a symbolic link.
func mode(of path: String) -> mode_t {
  var info = stat()
  precondition(lstat(path, &info) == 0, "lstat \(path) failed")
  return info.st_mode & 0o7777
}

/// The directory that holds the built products, including `appgroups-stress`.
///
/// Under `swift test` the test bundle (or its runner) lives in the products directory.
let productsDirectory: URL = {
  var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
  while url.path != "/" {
    url.deleteLastPathComponent()
    if FileManager.default.isExecutableFile(
      atPath: url.appendingPathComponent("appgroups-stress").path)
    {
      return url
    }
  }
  return Bundle.main.bundleURL.deletingLastPathComponent()
}()

/// A child process running `appgroups-stress`, killed with SIGKILL when dropped.
final class Child {
  let process = Process()

  init(_ arguments: [String], groups: String) throws {
    process.executableURL = productsDirectory.appendingPathComponent("appgroups-stress")
    process.arguments = arguments
    var environment = ProcessInfo.processInfo.environment
    environment["NOTIFYBUS_GROUPS_DIR"] = groups
    process.environment = environment
    try process.run()
  }

  deinit { kill() }

  func kill() {
    if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
  }

  /// Waits for the child to exit, killing it after `seconds`.
  ///
  /// Returns its exit status, or `nil` when it had to be killed.
  @discardableResult
  func wait(seconds: Double) -> Int32? {
    let deadline = Date().addingTimeInterval(seconds)
    while process.isRunning && Date() < deadline { usleep(5000) }
    if process.isRunning {
      kill()
      process.waitUntilExit()
      return nil
    }
    process.waitUntilExit()
    return process.terminationStatus
  }
}

/// The lines of a log file written by `appgroups-stress`.
func lines(of path: String) -> [String] {
  guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
  return text.split(separator: "\n").map(String.init)
}
