// The libFuzzer driver for every harness in Fuzz/.
//
//   Fuzz/run TARGET [runs]                     fuzz (builds with -sanitize=fuzzer)
//   swift run notifybus-fuzz TARGET FILE...    replay inputs without the fuzzer
//
// TARGET is a harness's folder under Fuzz/; the arguments after it go to libFuzzer.

import FuzzHarnesses

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

/// Exits with status 64 after saying what was wrong with the command line.
func usageError(_ message: String) -> Never {
  fputs("notifybus-fuzz: \(message)\n", stderr)
  fputs("usage: notifybus-fuzz TARGET [FILE...]\n", stderr)
  fputs("targets: \(fuzzHarnesses.keys.sorted().joined(separator: " "))\n", stderr)
  exit(64)
}

/// The harness the first argument names.
func harness(named argument: UnsafeMutablePointer<CChar>?) -> FuzzHarness {
  guard let argument else { usageError("no target given") }
  let name = String(cString: argument)
  guard let harness = fuzzHarnesses[name] else { usageError("no fuzz target '\(name)'") }
  return harness
}

/// The bytes of the file at `path`, or `nil` when it cannot be read.
func fuzzInput(atPath path: String) -> [UInt8]? {
  guard let file = fopen(path, "rb") else { return nil }
  defer { fclose(file) }
  var bytes: [UInt8] = []
  var chunk = [UInt8](repeating: 0, count: 65536)
  while true {
    let read = fread(&chunk, 1, chunk.count, file)
    if read == 0 { break }
    bytes += chunk[..<read]
  }
  return ferror(file) == 0 ? bytes : nil
}

#if FUZZING
  @_silgen_name("LLVMFuzzerRunDriver")
  func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
  ) -> CInt

  /// The harness being fuzzed: set once, before libFuzzer starts calling back on this thread.
  nonisolated(unsafe) var selected: FuzzHarness = { _ in }

  // SwiftPM links an executable's entry point as `<module>_main`; take the target from the
  // first argument there and hand the rest to libFuzzer's driver.
  @_cdecl("notifybus_fuzz_main")
  func fuzzerMain(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
  ) -> CInt {
    guard let argv, argc >= 2 else { usageError("no target given") }
    selected = harness(named: argv[1])
    argv[1] = argv[0]
    var count = argc - 1
    var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv + 1
    return runFuzzerDriver(&count, &arguments) { data, size in
      selected(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
      return 0
    }
  }
#else
  /// Replays fuzz inputs (for example a crash file or a corpus) without libFuzzer.
  @main
  struct Replay {
    static func main() {
      let arguments = CommandLine.unsafeArgv
      let harness = harness(named: CommandLine.argc >= 2 ? arguments[1] : nil)
      var count = 0
      for path in CommandLine.arguments.dropFirst(2) {
        guard let bytes = fuzzInput(atPath: path) else {
          fputs("notifybus-fuzz: cannot read \(path)\n", stderr)
          exit(1)
        }
        harness(bytes)
        count += 1
      }
      print("replayed \(count) inputs")
    }
  }
#endif
