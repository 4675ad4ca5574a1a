import BusTestSupport
import Foundation
import Synchronization
import SystemSupport

#if canImport(Glibc)
  import Glibc
#endif

/// A TLS listener on 127.0.0.1 in front of a real broker that can send a client several
/// MQTT packets in one TLS record.
///
/// `openssl s_server` terminates TLS and carries the connection's data on its standard
/// input and output (two FIFOs); the front copies between those and a TCP connection to
/// the broker. While ``hold()`` is in effect it keeps what the broker sends, and
/// ``release()`` hands all of it to s_server in one write, which s_server reads at once
/// and sends as one record (up to 16 KiB). A broker never does that itself (mosquitto
/// writes each packet as a record of its own), but a TLS proxy or another broker may.
final class RecordJoiningTLSFront: Sendable {
  let port: Int
  private let server: Mutex<Subprocess?>
  private let directory: String
  private let toServer: CInt
  private let fromServer: CInt
  private let broker: CInt
  private let held = Mutex<(holding: Bool, bytes: [UInt8])>((false, []))

  /// Starts s_server with `certificate` and `key` (PEM files), for one connection.
  init(to brokerPort: Int, certificate: String, key: String) throws {
    var template = Array("/tmp/notifybus-tlsfront-XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else { throw Errno.current }
    directory = String(cString: made)
    for fifo in ["in", "out"] where mkfifo(directory + "/" + fifo, 0o600) != 0 {
      throw Errno.current
    }
    // Read-write opens of a FIFO do not wait for the other end.
    toServer = open(directory + "/in", O_RDWR | O_CLOEXEC)
    fromServer = open(directory + "/out", O_RDWR | O_CLOEXEC)
    port = try MosquittoBroker.freePort()
    let brokerSocket = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    broker = brokerSocket
    let connected = MosquittoBroker.withLoopbackAddress(brokerPort) {
      connect(brokerSocket, $0, $1)
    }
    guard toServer >= 0, fromServer >= 0, broker >= 0, connected == 0 else {
      throw Errno.current
    }
    let script =
      "exec openssl s_server -quiet -naccept 1 -accept 127.0.0.1:\(port) "
      + "-cert '\(certificate)' -key '\(key)' < '\(directory)/in' > '\(directory)/out'"
    server = Mutex(
      try Subprocess.spawn(
        "/bin/sh", arguments: ["-c", script], captureOutput: false,
        errorFile: directory + "/s_server.log"))
    let (toServer, fromServer, broker) = (toServer, fromServer, broker)
    Thread.detachNewThread { Self.copy(from: fromServer, to: broker) }
    Thread.detachNewThread { [self] in
      var buffer = [UInt8](repeating: 0, count: 16_384)
      while true {
        let count = read(broker, &buffer, buffer.count)
        guard count > 0 else { return }
        let passing = held.withLock { held -> [UInt8] in
          guard !held.holding else {
            held.bytes += buffer[..<count]
            return []
          }
          return Array(buffer[..<count])
        }
        if !passing.isEmpty { Self.write(passing, to: toServer) }
      }
    }
    // Not by connecting: s_server takes one connection only.
    let deadline = ContinuousClock.now + .seconds(10)
    while !Self.isListening(port) && ContinuousClock.now < deadline {
      usleep(20_000)
    }
  }

  /// Whether a socket listens on 127.0.0.1:`port`, from /proc/net/tcp (state 0A).
  private static func isListening(_ port: Int) -> Bool {
    let table = (try? String(contentsOfFile: "/proc/net/tcp", encoding: .utf8)) ?? ""
    let local = "0100007F:" + String(format: "%04X", port)
    return table.split(separator: "\n").contains { line in
      let fields = line.split(separator: " ")
      return fields.count > 3 && fields[1] == local && fields[3] == "0A"
    }
  }

  deinit {
    server.withLock { $0?.kill(SIGKILL) }
    server.withLock { _ = $0?.wait() }
    shutdown(broker, Int32(SHUT_RDWR))
    for fd in [broker, toServer, fromServer] { close(fd) }
    Subprocess.removeTree(directory)
  }

  /// Keeps what the broker sends from now on, until ``release()``.
  func hold() { held.withLock { $0.holding = true } }

  /// The complete MQTT packets held, by type (the fixed header's high nibble: 3 PUBLISH).
  var heldPacketTypes: [UInt8] {
    held.withLock { held in
      var types: [UInt8] = []
      var index = 0
      let bytes = held.bytes
      while index < bytes.count {
        var length = 0
        var shift = 0
        var next = index + 1
        var lengthEnded = false
        while next < bytes.count && !lengthEnded {
          length |= Int(bytes[next] & 0x7F) << shift
          shift += 7
          lengthEnded = bytes[next] & 0x80 == 0
          next += 1
        }
        guard lengthEnded, next + length <= bytes.count else { break }
        types.append(bytes[index] >> 4)
        index = next + length
      }
      return types
    }
  }

  /// Sends everything held in one write (so one TLS record) and stops holding.
  func release() {
    let bytes = held.withLock { held -> [UInt8] in
      held.holding = false
      defer { held.bytes = [] }
      return held.bytes
    }
    Self.write(bytes, to: toServer)
  }

  /// What s_server logged.
  var log: String {
    (try? Products.runCommand("cat", [directory + "/s_server.log"]).output) ?? ""
  }

  private static func copy(from source: CInt, to sink: CInt) {
    var buffer = [UInt8](repeating: 0, count: 16_384)
    while true {
      let count = read(source, &buffer, buffer.count)
      guard count > 0 else { return }
      write(Array(buffer[..<count]), to: sink)
    }
  }

  private static func write(_ bytes: [UInt8], to sink: CInt) {
    var sent = 0
    while sent < bytes.count {
      let written = bytes.withUnsafeBytes {
        Glibc.write(sink, $0.baseAddress! + sent, bytes.count - sent)
      }
      guard written > 0 else { return }
      sent += written
    }
  }
}
