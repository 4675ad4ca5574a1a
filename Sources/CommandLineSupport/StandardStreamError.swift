#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A failed write to standard output or standard error, such as a closed pipe.
public struct StandardStreamError: Error, Hashable, Sendable, CustomStringConvertible {
  /// The stream: `standard output` or `standard error`.
  public var stream: String
  /// The `errno` value `write(2)` failed with, such as `EPIPE`.
  public var code: CInt

  /// Creates an error for a failed write to `stream`.
  public init(stream: String, code: CInt) {
    self.stream = stream
    self.code = code
  }

  /// `Unable to write to standard output: Broken pipe (errno 32)`.
  public var description: String {
    "Unable to write to \(stream): \(String(cString: strerror(code))) (errno \(code))"
  }

  /// Writes all of `text` to `descriptor` with `write(2)`, retrying after `EINTR` and
  /// waiting for the descriptor when it is non-blocking and full.
  static func write(_ text: String, to descriptor: CInt, stream: String) throws(StandardStreamError)
  {
    var text = text
    let failure: CInt = text.withUTF8 { buffer in
      var offset = 0
      while offset < buffer.count {
        #if canImport(Glibc)
          let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
        #elseif canImport(Musl)
          let written = Musl.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
        #endif
        if written >= 0 {
          offset += written
        } else if errno == EAGAIN || errno == EWOULDBLOCK {
          var waiter = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
          _ = poll(&waiter, 1, -1)
        } else if errno != EINTR {
          return errno
        }
      }
      return 0
    }
    if failure != 0 { throw StandardStreamError(stream: stream, code: failure) }
  }
}
