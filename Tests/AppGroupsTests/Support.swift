import AppGroups
import Glibc
import SystemSupport
import TestSupport

extension TemporaryDirectory {
  /// A fresh directory for a container test.
  convenience init() { self.init("appgroups-test") }

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

/// A child process running `appgroups-stress`, killed with SIGKILL when dropped.
final class Child {
  let process: Subprocess

  init(_ arguments: [String], groups: String) throws {
    var environment = Products.currentEnvironment()
    environment["NOTIFYBUS_GROUPS_DIR"] = groups
    process = try Subprocess.spawn(
      Products.path("appgroups-stress"), arguments: arguments, environment: environment,
      captureOutput: false)
  }

  deinit {
    kill()
    process.wait()
  }

  func kill() { process.kill(SIGKILL) }

  /// Waits for the child to exit, killing it after `seconds`.
  ///
  /// Returns its exit status, or `nil` when it had to be killed.
  @discardableResult
  func wait(seconds: Double) -> Int32? {
    switch process.wait(milliseconds: Int(seconds * 1000)) {
    case .exited(let status)?: return status
    case .signaled(let signal)?: return signal
    case nil:
      kill()
      process.wait()
      return nil
    }
  }
}

/// The lines of a log file written by `appgroups-stress`.
func lines(of path: String) -> [String] {
  guard let text = readFile(path) else { return [] }
  return text.split(separator: "\n").map(String.init)
}
