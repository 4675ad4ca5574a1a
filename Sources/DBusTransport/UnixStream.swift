import DBusCodec
import DBusMessages
import Glibc
import SystemSupport

/// A connected, blocking `AF_UNIX` stream socket that reads with a deadline and never raises
/// `SIGPIPE`.
final class UnixStream {
  private let descriptor: CInt

  /// Connects to the first entry of `address` that is a Unix socket (`path=` or
  /// `abstract=`) and accepts the connection.
  ///
  /// - Throws: ``DBusError`` with name ``DBusError/Name/noServer`` naming the socket and
  ///   the system's reason, or ``DBusError/Name/badAddress`` when no entry is a Unix socket.
  init(connectingTo address: BusAddress) throws(DBusError) {
    var failures: [(socket: String, reason: Errno)] = []
    for entry in address.entries where entry.transport == "unix" {
      let name: [UInt8]
      let described: String
      if let path = entry["path"] {
        name = Array(path.utf8)
        described = path
      } else if let abstract = entry["abstract"] {
        name = [0] + Array(abstract.utf8)
        described = "abstract " + abstract
      } else {
        continue  // dir=, tmpdir= and runtime= are for servers
      }
      do {
        descriptor = try Self.connect(to: name)
        return
      } catch {
        failures.append((described, error))
      }
    }
    switch failures.count {
    case 0:
      throw DBusError(
        .badAddress,
        "cannot connect to \(address): a one-shot connection reaches Unix sockets "
          + "(unix:path= or unix:abstract=) only")
    case 1:
      throw DBusError(.noServer, "cannot connect to \(address): \(failures[0].reason)")
    default:
      let each = failures.map { "\($0.socket): \($0.reason)" }
      throw DBusError(.noServer, "cannot connect to \(address): " + each.joined(separator: "; "))
    }
  }

  deinit { close(descriptor) }

  private static func connect(to name: [UInt8]) throws(Errno) -> CInt {
    var socketAddress = sockaddr_un()
    let capacity = MemoryLayout.size(ofValue: socketAddress.sun_path)
    guard name.count < capacity else { throw Errno(rawValue: ENAMETOOLONG) }
    socketAddress.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &socketAddress.sun_path) { $0.copyBytes(from: name) }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count + (name.first == 0 ? 0 : 1))
    let descriptor = socket(AF_UNIX, CInt(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0)
    guard descriptor >= 0 else { throw Errno.current }
    let connected = withUnsafePointer(to: &socketAddress) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        Glibc.connect(descriptor, $0, length)
      }
    }
    guard connected == 0 else {
      let error = Errno.current
      close(descriptor)
      throw error
    }
    return descriptor
  }

  /// Writes all of `bytes`.
  func write(_ bytes: [UInt8]) throws(Errno) {
    var offset = 0
    while offset < bytes.count {
      offset += try retryingOnInterrupt {
        bytes.withUnsafeBytes {
          send(descriptor, $0.baseAddress! + offset, $0.count - offset, CInt(MSG_NOSIGNAL))
        }
      }
    }
  }

  /// Appends what arrives, waiting until `deadline` (``MonotonicClock`` nanoseconds) for at
  /// least one byte.
  ///
  /// - Returns: `false` at end of stream.
  /// - Throws: ``Errno`` `ETIMEDOUT` when nothing arrived in time, or the read's error.
  func read(into buffer: inout [UInt8], deadline: Int) throws(Errno) -> Bool {
    var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
    while true {
      let remaining = (deadline - MonotonicClock.now) / 1_000_000
      guard remaining > 0 else { throw Errno(rawValue: ETIMEDOUT) }
      if try retryingOnInterrupt({ poll(&poller, 1, CInt(clamping: remaining)) }) > 0 { break }
    }
    let chunk = 65_536
    let start = buffer.count
    buffer.append(contentsOf: repeatElement(0, count: chunk))
    let count: Int
    do {
      count = try retryingOnInterrupt {
        buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress! + start, chunk, 0) }
      }
    } catch {
      buffer.removeLast(chunk)
      throw error
    }
    buffer.removeLast(chunk - count)
    return count > 0
  }
}
