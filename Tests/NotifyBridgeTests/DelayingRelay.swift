import Foundation
import Synchronization

#if canImport(Glibc)
  import Glibc
#endif

/// A TCP relay on 127.0.0.1 in front of a real broker that passes the client's first
/// packet (its CONNECT) at once and holds everything the client sends after it for
/// `delay`, while the broker's answers pass at once: the broker then answers CONNECT
/// long before it has seen the client's SUBSCRIBE.
final class DelayingRelay: Sendable {
  let port: Int
  private let listener: Int32
  private let closing = Atomic<Bool>(false)
  private let sockets = Mutex<[Int32]>([])

  init(to brokerPort: Int, delay: Duration) throws {
    let made = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    listener = made
    var address = Self.loopback(port: 0)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(made, $0, length) }
    }
    guard made >= 0, bound == 0, listen(made, 8) == 0 else {
      throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
    _ = withUnsafeMutablePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(made, $0, &length) }
    }
    port = Int(UInt16(bigEndian: address.sin_port))
    let listening = listener
    Thread.detachNewThread { [self] in
      while !closing.load(ordering: .acquiring) {
        let client = accept(listening, nil, nil)
        guard client >= 0 else { return }
        let broker = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var target = Self.loopback(port: brokerPort)
        let connected = withUnsafePointer(to: &target) {
          $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(broker, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
          }
        }
        sockets.withLock { $0 += [client, broker] }
        guard connected == 0 else {
          close(client)
          continue
        }
        Thread.detachNewThread { Self.pump(from: client, to: broker, holdingAfterFirst: delay) }
        Thread.detachNewThread { Self.pump(from: broker, to: client, holdingAfterFirst: nil) }
      }
    }
  }

  deinit {
    closing.store(true, ordering: .releasing)
    shutdown(listener, Int32(SHUT_RDWR))
    close(listener)
    for fd in sockets.withLock({ $0 }) {
      shutdown(fd, Int32(SHUT_RDWR))
      close(fd)
    }
  }

  private static func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    return address
  }

  /// Copies until either side closes; every read after the first waits `delay` first.
  private static func pump(from source: Int32, to sink: Int32, holdingAfterFirst delay: Duration?) {
    var buffer = [UInt8](repeating: 0, count: 4096)
    var first = true
    while true {
      let count = read(source, &buffer, buffer.count)
      guard count > 0 else { break }
      if let delay, !first {
        let (seconds, attoseconds) = delay.components
        usleep(UInt32(seconds) * 1_000_000 + UInt32(attoseconds / 1_000_000_000_000))
      }
      first = false
      var sent = 0
      while sent < count {
        let written = buffer.withUnsafeBytes { write(sink, $0.baseAddress! + sent, count - sent) }
        guard written > 0 else { return }
        sent += written
      }
    }
    shutdown(sink, Int32(SHUT_WR))
  }
}
