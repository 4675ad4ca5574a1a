import CSQLite
public import Foundation
import SystemSupport

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// The read-later app's library: reading items in a SQLite database in the group container,
/// their attachment files copied next to it.
///
/// Layout inside the container: `ReadLater/library.sqlite` (WAL mode, `synchronous=FULL`)
/// and `ReadLater/Attachments/<item id>/<file>`. Each item is stored in one transaction,
/// keyed by the share id, so storing a redelivered share again changes nothing.
///
/// Files are created with mode 0600 and directories with 0700 (SQLite gives its `-wal` and
/// `-shm` files the database's mode); a symbolic link planted for `ReadLater`,
/// `Attachments`, an item's directory or `library.sqlite` is refused, never followed.
public final class ReadingList {
  /// The database file.
  public let path: String
  /// Where attachment files are copied.
  public let attachmentsDirectory: URL
  /// The open `Attachments` directory: item directories are made relative to it.
  private let attachments: Directory<FileSystemError>
  private let handle: OpaquePointer

  /// A SQLite or file failure, with the statement or file involved.
  public struct Failure: Error, CustomStringConvertible {
    /// What failed.
    public var description: String
  }

  /// Opens (creating on first use) the library in a container directory.
  ///
  /// - Parameter containerURL: The group container.
  /// - Throws: ``Failure`` when the database cannot be opened or set up.
  public init(containerURL: URL) throws {
    let directory = containerURL.appendingPathComponent("ReadLater", isDirectory: true)
    attachmentsDirectory = directory.appendingPathComponent("Attachments", isDirectory: true)
    let library = try Directory<FileSystemError>.openPrivate(directory.path)
    attachments = try library.privateDirectory("Attachments")
    // Created here, 0600 and not through a link, before SQLite opens it by name; SQLite
    // then refuses a link there too (SQLITE_OPEN_NOFOLLOW).
    _ = try library.openFile("library.sqlite", flags: O_RDWR, create: true)
    path = library.childPath("library.sqlite")
    var opened: OpaquePointer?
    let flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW
    guard sqlite3_open_v2(path, &opened, flags, nil) == SQLITE_OK, let opened else {
      if let opened { sqlite3_close_v2(opened) }
      throw Failure(description: "Cannot open the reading list '\(path)'.")
    }
    handle = opened
    sqlite3_busy_timeout(handle, 10_000)
    try execute("PRAGMA journal_mode=WAL")
    try execute("PRAGMA synchronous=FULL")
    try execute(
      """
      CREATE TABLE IF NOT EXISTS items(
        id TEXT PRIMARY KEY, url TEXT, title TEXT NOT NULL, text TEXT NOT NULL,
        saved_at REAL NOT NULL)
      """)
    try execute(
      """
      CREATE TABLE IF NOT EXISTS attachments(
        item_id TEXT NOT NULL, position INTEGER NOT NULL, name TEXT NOT NULL,
        type TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL,
        PRIMARY KEY(item_id, position))
      """)
  }

  deinit { sqlite3_close_v2(handle) }

  /// Stores an item and copies its attachment files, in one transaction.
  ///
  /// - Parameter item: The item; its attachment paths point at the received files.
  /// - Returns: `false` when an item with the same id is already stored (nothing changes).
  /// - Throws: ``Failure``; the transaction is rolled back.
  @discardableResult
  public func insert(_ item: ReadingItem) throws -> Bool {
    try execute("BEGIN IMMEDIATE")
    do {
      let statement = try prepare(
        "INSERT OR IGNORE INTO items(id, url, title, text, saved_at) VALUES (?, ?, ?, ?, ?)")
      defer { sqlite3_finalize(statement) }
      bind(statement, 1, item.id)
      bind(statement, 2, item.url)
      bind(statement, 3, item.title)
      bind(statement, 4, item.text)
      sqlite3_bind_double(statement, 5, item.savedAt.timeIntervalSince1970)
      try step(statement, "insert item")
      guard sqlite3_changes(handle) == 1 else {
        try execute("ROLLBACK")
        return false
      }
      for (position, attachment) in item.attachments.enumerated() {
        let directory = try attachments.privateDirectory(item.id)
        let name = "\(position)-" + URL(fileURLWithPath: attachment.path).lastPathComponent
        try directory.copyFile(from: attachment.path, as: name)
        let target = directory.childPath(name)
        let insert = try prepare(
          "INSERT INTO attachments(item_id, position, name, type, path, size) "
            + "VALUES (?, ?, ?, ?, ?, ?)")
        defer { sqlite3_finalize(insert) }
        bind(insert, 1, item.id)
        sqlite3_bind_int64(insert, 2, Int64(position))
        bind(insert, 3, attachment.name)
        bind(insert, 4, attachment.type)
        bind(insert, 5, target)
        sqlite3_bind_int64(insert, 6, attachment.size)
        try step(insert, "insert attachment")
      }
      try execute("COMMIT")
      return true
    } catch {
      try? execute("ROLLBACK")
      throw error
    }
  }

  /// Every stored item, oldest first.
  ///
  /// - Throws: ``Failure``.
  public func items() throws -> [ReadingItem] {
    var attachments: [String: [ReadingItem.Attachment]] = [:]
    let files = try prepare(
      "SELECT item_id, name, type, path, size FROM attachments ORDER BY item_id, position")
    defer { sqlite3_finalize(files) }
    while try next(files) {
      attachments[text(files, 0), default: []].append(
        .init(
          name: text(files, 1), type: text(files, 2), path: text(files, 3),
          size: sqlite3_column_int64(files, 4)))
    }
    let rows = try prepare(
      "SELECT id, url, title, text, saved_at FROM items ORDER BY saved_at, id")
    defer { sqlite3_finalize(rows) }
    var result: [ReadingItem] = []
    while try next(rows) {
      let id = text(rows, 0)
      result.append(
        ReadingItem(
          id: id, url: sqlite3_column_type(rows, 1) == SQLITE_NULL ? nil : text(rows, 1),
          title: text(rows, 2), text: text(rows, 3),
          savedAt: Date(timeIntervalSince1970: sqlite3_column_double(rows, 4)),
          attachments: attachments[id] ?? []))
    }
    return result
  }

  // MARK: - SQLite helpers

  private func execute(_ sql: String) throws {
    guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else { throw failure(sql) }
  }

  private func prepare(_ sql: String) throws -> OpaquePointer {
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement
    else { throw failure(sql) }
    return statement
  }

  private func bind(_ statement: OpaquePointer, _ index: CInt, _ value: String?) {
    if let value {
      sqlite3_bind_text(statement, index, value, -1, CSQLite_TRANSIENT())
    } else {
      sqlite3_bind_null(statement, index)
    }
  }

  private func step(_ statement: OpaquePointer, _ what: String) throws {
    guard sqlite3_step(statement) == SQLITE_DONE else { throw failure(what) }
  }

  private func next(_ statement: OpaquePointer) throws -> Bool {
    switch sqlite3_step(statement) {
    case SQLITE_ROW: return true
    case SQLITE_DONE: return false
    default: throw failure("select")
    }
  }

  private func text(_ statement: OpaquePointer, _ column: CInt) -> String {
    sqlite3_column_text(statement, column).map { String(cString: $0) } ?? ""
  }

  private func failure(_ what: String) -> Failure {
    Failure(
      description: "SQLite failed on '\(what)' in '\(path)': "
        + String(cString: sqlite3_errmsg(handle)))
  }
}
