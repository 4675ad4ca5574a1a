import SystemSupport
import TestSupport
import Testing

#if canImport(Glibc)
  import Glibc
#endif

struct SubprocessTests {
  @Test func capturesOutputAndErrorAndTheExitStatus() throws {
    let process = try Subprocess.spawn(
      "sh", arguments: ["-c", "echo out; echo err >&2; exit 3"], captureError: true)
    let (output, error) = process.readToEnd(milliseconds: 10_000)
    #expect(output == "out\n")
    #expect(error == "err\n")
    #expect(process.wait() == .exited(3))
  }

  @Test func readsLinesAsTheyArriveAndGivesUpAtTheDeadline() throws {
    let process = try Subprocess.spawn("sh", arguments: ["-c", "echo first; exec sleep 30"])
    defer {
      process.kill()
      process.wait()
    }
    #expect(process.readLine(milliseconds: 10_000) == "first")
    #expect(process.readLine(milliseconds: 50) == nil, "no second line within 50 ms")
    #expect(process.wait(milliseconds: 0) == nil, "still running")
    process.kill(SIGTERM)
    #expect(process.wait() == .signaled(SIGTERM))
  }

  @Test func theChildGetsTheGivenEnvironmentAndAnEmptyStandardInput() throws {
    let process = try Subprocess.spawn(
      "sh", arguments: ["-c", "echo \"$GREETING\"; cat"], environment: ["GREETING": "hello"])
    #expect(process.readToEnd(milliseconds: 10_000).output == "hello\n")
    #expect(process.wait() == .exited(0))
  }

  @Test func standardErrorGoesToTheErrorFile() throws {
    let directory = TemporaryDirectory("subprocess")
    let log = directory.path("err.log")
    let process = try Subprocess.spawn(
      "sh", arguments: ["-c", "echo one >&2"], captureOutput: false, errorFile: log)
    #expect(process.wait() == .exited(0))
    let again = try Subprocess.spawn(
      "sh", arguments: ["-c", "echo two >&2"], captureOutput: false, errorFile: log)
    #expect(again.wait() == .exited(0))
    #expect(readFile(log) == "one\ntwo\n", "appended, not replaced")
  }

  @Test func aMissingProgramIsNoSuchFile() {
    #expect(throws: Errno.noSuchFileOrDirectory) {
      try Subprocess.spawn("/nonexistent/notifybus-program", arguments: [])
    }
  }

  @Test func childrenStartWithDefaultSignalHandling() throws {
    // SIGTERM ignored here must still end the child.
    let previous = signal(SIGTERM, SIG_IGN)
    defer { signal(SIGTERM, previous) }
    let process = try Subprocess.spawn("sleep", arguments: ["30"], captureOutput: false)
    process.kill(SIGTERM)
    #expect(process.wait(milliseconds: 10_000) == .signaled(SIGTERM))
  }

  @Test func removeTreeRemovesOnlyTemporaryDirectories() throws {
    let directory = TemporaryDirectory("remove-tree")
    writeFile(directory.path("file"), "x")
    Subprocess.removeTree(directory.path)
    #expect(access(directory.path, F_OK) != 0)
    Subprocess.removeTree("/etc")
    #expect(access("/etc", F_OK) == 0)
  }
}

struct ErrnoTests {
  @Test func describesTheErrorWithItsNumber() {
    #expect(Errno.noSuchFileOrDirectory.description == "(2) No such file or directory")
    #expect(Errno(rawValue: EACCES) == .permissionDenied)
  }

  @Test func retriesOnlyInterruptedCalls() throws {
    var calls = 0
    let result = try retryingOnInterrupt { () -> CInt in
      calls += 1
      if calls < 3 {
        errno = EINTR
        return -1
      }
      return 7
    }
    #expect(result == 7 && calls == 3)
    #expect(throws: Errno.permissionDenied) {
      try retryingOnInterrupt { () -> CInt in
        errno = EACCES
        return -1
      }
    }
  }
}
