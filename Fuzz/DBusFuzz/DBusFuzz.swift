// libFuzzer target for every parser of outside input in the DBus and Notify modules:
// names, signatures, match rules, bus addresses, marshalled messages, notification names
// and received `Posted` signals.
//
//   Fuzz/run DBusFuzz [runs]      fuzz (builds with -sanitize=fuzzer)
//   swift run dbus-fuzz FILE...   replay inputs without the fuzzer
//
// The first byte picks the parser; the rest is the input.
import DBus
import Notify

#if canImport(Glibc)
  @preconcurrency import Glibc
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  guard let data, size > 0 else { return 0 }
  let selector = data[0]
  let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
  let text = String(decoding: input, as: UTF8.self)
  switch selector % 6 {
  case 0:
    _ = try? BusName(text)
    _ = try? InterfaceName(text)
    _ = try? MemberName(text)
    _ = try? ObjectPath(text)
    if let signature = try? Signature(text) {
      // Every valid signature splits into complete types that join back to it.
      precondition(signature.completeTypes.map(\.rawValue).joined() == text)
    }
  case 1:
    if let rule = try? MatchRule(parsing: text) {
      // A parsed rule renders to text that parses back to the same rule.
      precondition((try? MatchRule(parsing: rule.description)) == rule, "\(rule)")
    }
  case 2:
    _ = try? BusAddress(text)
    _ = try? Bus(parsing: text)
  case 5:
    // A notification name and its interface; a Posted signal built from bytes.
    if let name = try? NotifyName(text) {
      let interface = NotifyWire.interface(for: name)
      precondition(InterfaceName.isValid(interface.rawValue), "\(name) → \(interface)")
      precondition(NotifyWire.postedName(in: NotifyWire.signal(for: name, sequence: 1)) == name)
    }
    if let message = try? Message(marshalled: input), let name = NotifyWire.postedName(in: message)
    {
      precondition(NotifyWire.isPosted(message, name: name))
    }
  default:
    if let message = try? Message(marshalled: input) {
      // What libdbus accepted, we can write again and read back unchanged.
      var again = message
      again.serial = message.serial == 0 ? 1 : message.serial
      if let bytes = try? again.marshalled() {
        precondition((try? Message(marshalled: bytes))?.body == message.body)
      }
    }
  }
  return 0
}

#if FUZZING
  // SwiftPM links an executable's entry point as `<module>_main`; hand control to
  // libFuzzer's driver from there.
  @_silgen_name("LLVMFuzzerRunDriver")
  func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
  ) -> CInt

  @_cdecl("dbus_fuzz_main")
  func fuzzerMain(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
  ) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments, fuzzOne)
  }
#else
  /// Replays fuzz inputs (for example a crash file or the corpus) without libFuzzer.
  @main
  struct Replay {
    static func main() {
      var count = 0
      for path in CommandLine.arguments.dropFirst() {
        guard let file = fopen(path, "rb") else {
          fputs("dbus-fuzz: cannot open \(path)\n", stderr)
          exit(1)
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
          let read = fread(&chunk, 1, chunk.count, file)
          if read == 0 { break }
          bytes += chunk[..<read]
        }
        fclose(file)
        _ = bytes.withUnsafeBufferPointer { fuzzOne($0.baseAddress, $0.count) }
        count += 1
      }
      print("replayed \(count) inputs")
    }
  }
#endif
