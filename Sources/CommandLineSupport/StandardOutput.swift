#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Unbuffered writes to standard output, for results, such as one line per notification.
///
/// Each call is one `write(2)` of the whole text, so nothing waits in a buffer even when
/// standard output is a pipe or a file, and a line of up to `PIPE_BUF` (4096) bytes reaches a
/// pipe in one piece even when several threads write. Do not mix these with `print`, which
/// buffers: the order of the output would not be kept.
///
/// A write to a closed pipe raises `SIGPIPE`, which ends the process as it ends a C tool
/// (`notify-watch | head -1` stops after one line). When `SIGPIPE` is ignored the write
/// throws instead.
public enum StandardOutput {
  /// Writes `text` as is.
  ///
  /// - Throws: StandardStreamError when `write(2)` fails, for example with `EPIPE`.
  public static func write(_ text: String) throws(StandardStreamError) {
    try StandardStreamError.write(text, to: STDOUT_FILENO, stream: "standard output")
  }

  /// Writes `line` and a newline in one `write(2)`, so the line is out at once.
  ///
  /// - Throws: StandardStreamError when `write(2)` fails, for example with `EPIPE`.
  public static func writeLine(_ line: String) throws(StandardStreamError) {
    try write(line + "\n")
  }
}
