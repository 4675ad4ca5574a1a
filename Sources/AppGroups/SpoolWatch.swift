#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Tells a consumer when a producer may have added to a spool: an inotify descriptor on
/// its `segments/` and `new/` (`Protocol/handoff.md` §4, item 4).
///
/// A record appended to a segment is a write to a `*.seg` file in `segments/`; a segment
/// or an entry renamed into place is a move into `segments/` or `new/`. Nothing else the
/// spool's files see counts: a consumer's own cursor writes (`*.pos`, beside the segments)
/// and its claims and removals would otherwise wake it for what it did itself. The
/// descriptor is non-blocking: poll it for reading (``BusConnection`` does for the handoff's
/// importer), then call ``readChanges()``.
package final class SpoolWatch: Sendable {
  /// The inotify descriptor.
  package let descriptor: CInt
  private let segmentsWatch: CInt

  /// Watches `spool`'s directories.
  ///
  /// - Throws: ``ContainerError`` when inotify cannot be had (the process's or the user's
  ///   limits of instances or watches).
  package init(_ spool: Spool) throws(ContainerError) {
    let descriptor = inotify_init1(CInt(IN_NONBLOCK | IN_CLOEXEC))
    guard descriptor >= 0 else {
      throw .syscall(
        "inotify_init1", errno: errno, path: spool.path, doing: "watch the spool for new entries")
    }
    let moved = UInt32(IN_MOVED_TO | IN_ONLYDIR | IN_DONT_FOLLOW)
    let segments = spool.path + "/segments"
    let segmentsWatch = inotify_add_watch(descriptor, segments, moved | UInt32(IN_MODIFY))
    let newWatch = inotify_add_watch(descriptor, spool.path + "/new", moved)
    guard segmentsWatch >= 0, newWatch >= 0 else {
      let code = errno
      close(descriptor)
      throw .syscall(
        "inotify_add_watch", errno: code, path: segmentsWatch < 0 ? segments : spool.path + "/new",
        doing: "watch the spool for new entries")
    }
    self.descriptor = descriptor
    self.segmentsWatch = segmentsWatch
  }

  deinit { close(descriptor) }

  /// Reads every event waiting on the descriptor.
  ///
  /// - Returns: Whether one of them may be a new entry: a write to or a move of a `*.seg`
  ///   in `segments/`, a move into `new/`, or a lost event (the kernel's queue overflowed).
  package func readChanges() -> Bool {
    var changed = false
    // Room for many events of the longest name.
    let capacity = 16 * (MemoryLayout<inotify_event>.size + Int(NAME_MAX) + 1)
    withUnsafeTemporaryAllocation(byteCount: capacity, alignment: 8) { buffer in
      while true {
        let count = read(descriptor, buffer.baseAddress, capacity)
        guard count > 0 else { return }
        var offset = 0
        while offset + MemoryLayout<inotify_event>.size <= count {
          let event = buffer.baseAddress!.advanced(by: offset)
          let header = event.loadUnaligned(as: inotify_event.self)
          let nameStart = offset + MemoryLayout<inotify_event>.size
          offset = nameStart + Int(header.len)
          if header.mask & UInt32(IN_Q_OVERFLOW) != 0 { changed = true }
          guard !changed else { continue }
          guard header.wd == segmentsWatch else {
            changed = true  // moved into new/
            continue
          }
          let name = UnsafeRawBufferPointer(
            rebasing: buffer[nameStart..<min(offset, count)]
          ).prefix { $0 != 0 }
          changed = name.count > 4 && name.suffix(4).elementsEqual(".seg".utf8)
        }
      }
    }
    return changed
  }
}
