import CSystemShim
import Synchronization

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// A directory listed again and again through one descriptor: a listing rewinds it
/// (`lseek`) and reads the names (`getdents64`), with no `openat` and `close` around each
/// as ``Directory/forEachRawName(_:)`` needs.
///
/// Listings from several threads take turns (they share the descriptor's read offset).
package struct DirectoryLister<Failure: FileSystemFailure>: ~Copyable, Sendable {
  /// The directory's path, for messages.
  package let path: String
  private let listing: Mutex<FileDescriptor<Failure>>

  /// A lister that owns `directory`'s descriptor: give it a descriptor of its own
  /// (``Directory/reopen()``), so no other listing moves its read offset.
  package init(_ directory: consuming Directory<Failure>) {
    path = directory.path
    listing = Mutex(directory.descriptor)
  }

  /// Calls `body` with the raw bytes of each name (without `.` and `..`), as
  /// ``Directory/forEachRawName(_:)`` does.
  package func forEachRawName(_ body: (UnsafeRawBufferPointer) -> Void) throws(Failure) {
    try listing.withLock { (descriptor) throws(Failure) in
      _ = try descriptor.call("lseek", doing: "list") { lseek($0, 0, SEEK_SET) }
      try Directory<Failure>.readNames(descriptor, body)
    }
  }

  /// The names in the directory, without `.` and `..`, in no particular order.
  package func entries() throws(Failure) -> [String] {
    var names: [String] = []
    try forEachRawName { names.append(String(decoding: $0, as: UTF8.self)) }
    return names
  }
}
