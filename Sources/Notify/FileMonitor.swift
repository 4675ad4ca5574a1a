import Dispatch
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Watches files with inotify for ``NotifyCenter/monitorFile(_:for:)``: one inotify
/// instance per process, one watch per directory, events of one file within
/// ``coalescingWindow`` folded into one post, as Darwin's notifyd folds path events.
final class FileMonitor: Sendable {
  /// Darwin's `PNODE_COALESCE_TIME`.
  static let coalescingWindow: DispatchTimeInterval = .milliseconds(100)
  static let shared = FileMonitor()

  private struct Watch {
    weak var center: NotifyCenter?
    let token: NotifyToken
    let name: NotifyName
    let directory: Int32
    let file: [UInt8]
    var scheduled = false
  }

  private struct State {
    var descriptor: CInt = -1
    var source: (any DispatchSourceRead)?
    var watches: [NotifyToken: Watch] = [:]
  }

  private let queue = DispatchQueue(label: "org.notifybus.file-monitor")
  private let state = Mutex(State())

  /// The events watched: creation, deletion, renames both ways, writes and attribute changes.
  ///
  /// Each `write` and truncation is an event; a close is not (`IN_CLOSE_WRITE`): a write and
  /// its close would be two events, and two deliveries when the close comes late.
  private static let events = UInt32(
    IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY | IN_ATTRIB)

  /// Starts watching `path` for `token`, posting `name` to it.
  func watch(_ path: String, token: NotifyToken, name: NotifyName, center: NotifyCenter)
    throws(NotifyError)
  {
    let bytes = Array(path.utf8)
    guard !bytes.isEmpty, !bytes.contains(0) else {
      throw NotifyError(.invalidRequest, "'\(path)' is not a path")
    }
    let slash = bytes.lastIndex(of: UInt8(ascii: "/"))
    let file = Array(bytes[(slash.map { $0 + 1 } ?? 0)...])
    guard !file.isEmpty, file != Array(".".utf8), file != Array("..".utf8) else {
      throw NotifyError(.invalidRequest, "'\(path)' does not name a file in a directory")
    }
    let directoryPath: String
    switch slash {
    case nil: directoryPath = "."
    case 0: directoryPath = "/"
    case let end?: directoryPath = String(decoding: bytes[..<end], as: UTF8.self)
    }
    try state.withLock { state throws(NotifyError) in
      guard state.watches[token] == nil else {
        throw NotifyError(.invalidRequest, "token \(token) already monitors a file")
      }
      if state.descriptor < 0 {
        let fd = inotify_init1(CInt(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else {
          throw NotifyError(.failed, "cannot start inotify: errno \(errno)")
        }
        state.descriptor = fd
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [weak self] in self?.readEvents() }
        source.resume()
        state.source = source
      }
      let wd = inotify_add_watch(state.descriptor, directoryPath, Self.events)
      guard wd >= 0 else {
        throw NotifyError(
          .invalidRequest,
          "cannot watch the directory '\(directoryPath)' of '\(path)': errno \(errno)")
      }
      state.watches[token] = Watch(
        center: center, token: token, name: name, directory: wd, file: file)
    }
  }

  /// Stops watching for `token`.
  func stop(_ token: NotifyToken) {
    state.withLock { state in
      guard let removed = state.watches.removeValue(forKey: token) else { return }
      // inotify gives one watch descriptor per directory, shared by every token.
      if !state.watches.values.contains(where: { $0.directory == removed.directory }) {
        inotify_rm_watch(state.descriptor, removed.directory)
      }
    }
  }

  private func readEvents() {
    let fd = state.withLock { $0.descriptor }
    var buffer = [UInt8](repeating: 0, count: 16 * 1024)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      guard count > 0 else { return }
      var offset = 0
      let header = MemoryLayout<inotify_event>.size
      while offset + header <= count {
        let (wd, length) = buffer.withUnsafeBytes { raw in
          (
            raw.loadUnaligned(fromByteOffset: offset, as: Int32.self),
            Int(raw.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
          )
        }
        let nameBytes = buffer[(offset + header)..<min(count, offset + header + length)]
        let file = Array(nameBytes.prefix { $0 != 0 })
        offset += header + length
        changed(directory: wd, file: file)
      }
    }
  }

  /// Schedules one post, after the coalescing window, to each token watching `file`.
  private func changed(directory: Int32, file: [UInt8]) {
    let due = state.withLock { state -> [NotifyToken] in
      var due: [NotifyToken] = []
      for (token, watch) in state.watches
      where watch.directory == directory && watch.file == file && !watch.scheduled {
        state.watches[token]?.scheduled = true
        due.append(token)
      }
      return due
    }
    for token in due {
      queue.asyncAfter(deadline: .now() + Self.coalescingWindow) { [weak self] in
        self?.fire(token)
      }
    }
  }

  private func fire(_ token: NotifyToken) {
    let watch = state.withLock { state -> Watch? in
      state.watches[token]?.scheduled = false
      return state.watches[token]
    }
    guard let watch else { return }
    guard let center = watch.center, center.isValid(token) else {
      stop(token)
      return
    }
    center.deliver(watch.name, toToken: token)
  }
}

extension NotifyCenter {
  /// Delivers a post of `name` to the one registration `token`.
  func deliver(_ name: NotifyName, toToken token: NotifyToken) {
    let actions = registry.withLock { $0.post(name, toToken: token) }
    perform(actions)
  }
}
