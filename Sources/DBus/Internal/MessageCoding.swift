import CDBus

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// Converts between ``Message`` values and libdbus `DBusMessage` objects.
///
/// Every function here works on a message it creates or was handed, on the calling
/// thread, and never stores the pointer; a `DBusMessage` has no lock, but one that no
/// other thread can reach needs none.
///
/// Building goes through DBusMessages' marshaller and one `dbus_message_demarshal`, but for
/// method calls and replies of at most one basic argument, which libdbus builds for less
/// (see ``buildPath(_:)``); reading goes through libdbus's getters and
/// iterators.
///
/// - Building: libdbus rewrites the header's signature field on every
///   `dbus_message_iter_append_*` (it reads the signature out, appends one type code and
///   marshals the field back in, moving the rest of the header), so a `Posted` signal of
///   three arguments cost about 62,000 instructions through the iterators, C or Swift alike
///   (callgrind, libdbus 1.14). Marshalling the whole message in Swift (about 4,000) and
///   handing libdbus the bytes (about 28,000 more: it copies and validates them) costs a
///   little over half (`notifybus-bench message`). A demarshalled message keeps the serial its bytes carry; the bytes
///   are written with serial 1, the wire format's lowest, and the serial is reset to 0
///   right after (a demarshalled message is not locked, and `dbus_message_copy` resets a
///   serial the same way), so `dbus_connection_send` numbers it from the connection's
///   counter like every message libdbus makes itself (`Hello`, its own error replies):
///   serials stay unique per connection, with no second counter to keep in step.
/// - Reading: a received message is already validated by libdbus, and a few getters cost
///   less than copying its bytes out with `dbus_message_marshal` and validating them again
///   (0.13–0.18x the rate for a `Posted` signal through the codec).
///
/// The iterator builder stays as ``makeRawThroughIterators(_:)``: libdbus's own encoding,
/// the oracle that tests and the fuzzer hold the marshaller to, and the benchmark's
/// baseline.
package enum MessageCoding {
  /// Builds a libdbus message from `message`; the caller owns the returned reference.
  ///
  /// A message with serial 0 (not yet sent) gets its serial from the connection that
  /// sends it; a non-zero serial is kept.
  ///
  /// - Throws: ``DBusError`` when the message is malformed (``Message/validate()``), longer
  ///   than ``Message/maximumWireLength``, or refused by libdbus (a name made with
  ///   `init(unchecked:)` that is not valid, named in the error).
  package static func makeRaw(_ message: Message) throws(DBusError) -> OpaquePointer {
    try message.validate()
    if buildPath(message) == .libdbus { return try buildThroughLibdbus(message) }
    return try marshalAndDemarshal(message)
  }

  /// ``makeRaw(_:)`` through the marshaller and `dbus_message_demarshal`, whatever the
  /// message; for tests to compare the two ways.
  package static func makeRawThroughMarshaller(_ message: Message) throws(DBusError)
    -> OpaquePointer
  {
    try message.validate()
    return try marshalAndDemarshal(message)
  }

  /// How ``makeRaw(_:)`` builds a message.
  package enum BuildPath: Sendable, Equatable {
    /// `dbus_message_new_method_call` for a call, libdbus's setters for a reply.
    case libdbus
    /// The Swift marshaller, then `dbus_message_demarshal`.
    case marshaller
  }

  /// ``BuildPath/libdbus`` when libdbus builds `message` for less than marshalling it and
  /// having libdbus validate all of it again: a method call or a reply whose body is at
  /// most one argument of a fixed type or a string; ``BuildPath/marshaller`` otherwise.
  ///
  /// `dbus_message_demarshal` validates every byte, about 13,000 instructions for the
  /// smallest message. `dbus_message_new_method_call` writes a call's header in one go
  /// (about 9,600 for four fields), a reply's two or three fields cost a setter about 3,000
  /// each, and the first argument 5,500 to 8,000 (libdbus rewrites the header's signature
  /// field for every argument, so a `Posted` signal of three arguments is the other way
  /// round, and a signal's fields set one by one cost more than the marshaller too): a
  /// `GetState` call costs about 18,000 instructions that way against 26,700, its reply
  /// (`t`) 12,700 against 17,300 (callgrind, libdbus 1.14).
  ///
  /// Only names libdbus's own validators accept go that way: its constructors and setters
  /// stop the program on an invalid one (a name made with `init(unchecked:)`), where
  /// `dbus_message_demarshal` refuses it with an error. A call carrying a field a call does
  /// not have (a reply serial, an error name) goes through the marshaller, which writes
  /// or refuses it as it always did: `dbus_message_new_method_call` would drop it.
  package static func buildPath(_ message: Message) -> BuildPath {
    buildsFasterThroughLibdbus(message) ? .libdbus : .marshaller
  }

  private static func buildsFasterThroughLibdbus(_ message: Message) -> Bool {
    guard message.sender == nil, isAtMostOneBasicArgument(message.body) else { return false }
    func valid(
      _ name: String?,
      _ validator: (UnsafePointer<CChar>?, UnsafeMutablePointer<CDBus.DBusError>?) -> dbus_bool_t
    ) -> Bool {
      guard let name else { return true }
      return name.withCString { validator($0, nil) } != 0
    }
    switch message.kind {
    case .methodCall:
      return message.replySerial == 0 && message.errorName == nil
        && valid(message.path?.rawValue, dbus_validate_path)
        && valid(message.interface?.rawValue, dbus_validate_interface)
        && valid(message.member?.rawValue, dbus_validate_member)
        && valid(message.destination?.rawValue, dbus_validate_bus_name)
    case .methodReturn, .error:
      // The error name was checked by `validate()`.
      return message.path == nil && message.interface == nil && message.member == nil
        && valid(message.destination?.rawValue, dbus_validate_bus_name)
    case .signal:
      return false
    }
  }

  /// Whether `body` is at most one argument of a fixed type or a string, which libdbus
  /// appends for less than the marshaller and `dbus_message_demarshal` cost.
  ///
  /// A string longer than half of ``Message/maximumWireLength`` goes through the
  /// marshaller, which refuses a message over the limit: libdbus's setters would build it,
  /// and the bus would drop the connection that sent it.
  private static func isAtMostOneBasicArgument(_ body: [DBusValue]) -> Bool {
    guard body.count <= 1 else { return false }
    switch body.first {
    case nil, .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double:
      return true
    case .string(let text):
      return text.utf8.count <= Message.maximumWireLength / 2
    default:
      return false
    }
  }

  /// A reply to `call`, a method call this connection received, built as a C service
  /// builds it: `dbus_message_new_method_return` or `dbus_message_new_error` take the
  /// destination and the reply serial from the call, then libdbus appends the body
  /// (notifyd's `GetState` costs 1,770 instructions less than with a new message and its
  /// setters); the caller owns the returned reference.
  ///
  /// `nil` when the body (an error's message included) is not at most one basic
  /// argument, or the error name is not valid: the caller then builds the reply as a
  /// ``Message`` (``Message/makeReply(body:)``, ``Message/makeErrorReply(_:)``) and
  /// ``makeRaw(_:)`` builds or refuses it. libdbus stops the program on an invalid error
  /// name, which is why it is checked here first. Like libdbus's, the reply carries the
  /// `NO_REPLY_EXPECTED` flag, which means nothing on a reply.
  ///
  /// - Throws: ``DBusError`` when the body is malformed (a string holding NUL), as
  ///   ``Message/validate()`` would.
  package static func makeRawReply(
    to call: OpaquePointer, with result: Result<[DBusValue], DBusError>
  ) throws(DBusError) -> OpaquePointer? {
    let made: OpaquePointer?
    let argument: DBusValue?
    switch result {
    case .success(let body):
      guard isAtMostOneBasicArgument(body) else { return nil }
      argument = body.first
      try argument?.validate()
      made = dbus_message_new_method_return(call)
    case .failure(let error):
      guard InterfaceName.isValid(error.name.rawValue),
        isAtMostOneBasicArgument([.string(error.message)])
      else { return nil }
      argument = nil
      try DBusValue.string(error.message).validate()
      made = error.name.rawValue.withCString { name in
        error.message.withCString { dbus_message_new_error(call, name, $0) }
      }
    }
    guard let raw = made else { throw DBusError(.noMemory, "out of memory") }
    if let argument {
      var iter = DBusMessageIter()
      dbus_message_iter_init_append(raw, &iter)
      guard append(argument, to: &iter) else {
        dbus_message_unref(raw)
        throw DBusError(.noMemory, "out of memory while building a message")
      }
    }
    return raw
  }

  /// Builds a message ``buildPath(_:)`` sends to ``BuildPath/libdbus``: a method call with
  /// `dbus_message_new_method_call`, a reply with libdbus's setters.
  private static func buildThroughLibdbus(_ message: Message) throws(DBusError) -> OpaquePointer {
    guard message.kind == .methodCall, let path = message.path, let member = message.member
    else { return try buildThroughIterators(message) }
    func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
      guard let text else { return body(nil) }
      return text.withCString { body($0) }
    }
    let made = withOptionalCString(message.destination?.rawValue) { destination in
      withOptionalCString(message.interface?.rawValue) { interface in
        path.rawValue.withCString { path in
          member.rawValue.withCString { member in
            dbus_message_new_method_call(destination, path, interface, member)
          }
        }
      }
    }
    guard let raw = made else { throw DBusError(.noMemory, "out of memory") }
    if message.serial != 0 { dbus_message_set_serial(raw, message.serial) }
    dbus_message_set_no_reply(raw, message.noReplyExpected ? 1 : 0)
    dbus_message_set_auto_start(raw, message.noAutoStart ? 0 : 1)
    var iter = DBusMessageIter()
    dbus_message_iter_init_append(raw, &iter)
    if let value = message.body.first, !append(value, to: &iter) {
      dbus_message_unref(raw)
      throw DBusError(.noMemory, "out of memory while building a message")
    }
    return raw
  }

  private static func marshalAndDemarshal(_ message: Message) throws(DBusError)
    -> OpaquePointer
  {
    let bytes = try message.marshalled(
      validatedWithSerial: message.serial == 0 ? 1 : message.serial)
    let raw = try demarshal(bytes, refusal: "libdbus refused the message")
    if message.serial == 0 { dbus_message_set_serial(raw, 0) }
    return raw
  }

  /// Builds a libdbus message from `message` with libdbus's setters and iterators, as C
  /// code does; the caller owns the returned reference.
  ///
  /// Slower than the marshaller for a message of more than one argument; kept as the
  /// independent encoding that the marshaller is checked against.
  ///
  /// - Throws: ``DBusError`` when the message is malformed. Everything libdbus would
  ///   refuse with a fatal check failure is caught here first.
  package static func makeRawThroughIterators(_ message: Message) throws(DBusError)
    -> OpaquePointer
  {
    try message.validate()
    return try buildThroughIterators(message)
  }

  /// ``makeRawThroughIterators(_:)`` for a message ``Message/validate()`` has accepted.
  private static func buildThroughIterators(_ message: Message) throws(DBusError)
    -> OpaquePointer
  {
    let type: CInt =
      switch message.kind {
      case .methodCall: DBUS_MESSAGE_TYPE_METHOD_CALL
      case .methodReturn: DBUS_MESSAGE_TYPE_METHOD_RETURN
      case .error: DBUS_MESSAGE_TYPE_ERROR
      case .signal: DBUS_MESSAGE_TYPE_SIGNAL
      }
    guard let raw = dbus_message_new(type) else { throw DBusError(.noMemory, "out of memory") }
    var ok = true
    // `withCString`, not the implicit conversion: that copies a short (inline) string
    // into a heap array on every call.
    func set(
      _ text: String?, _ setter: (OpaquePointer, UnsafePointer<CChar>) -> dbus_bool_t
    ) {
      guard ok, let text else { return }
      ok = text.withCString { setter(raw, $0) } != 0
    }
    // Each setter appends its field: set in the order libdbus's constructors write them,
    // as the marshaller does.
    set(message.path?.rawValue, dbus_message_set_path)
    set(message.destination?.rawValue, dbus_message_set_destination)
    set(message.interface?.rawValue, dbus_message_set_interface)
    set(message.member?.rawValue, dbus_message_set_member)
    set(message.errorName?.rawValue, dbus_message_set_error_name)
    set(message.sender?.rawValue, dbus_message_set_sender)
    if message.replySerial != 0 {
      ok = ok && dbus_message_set_reply_serial(raw, message.replySerial) != 0
    }
    if message.serial != 0 { dbus_message_set_serial(raw, message.serial) }
    dbus_message_set_no_reply(raw, message.noReplyExpected ? 1 : 0)
    dbus_message_set_auto_start(raw, message.noAutoStart ? 0 : 1)
    var iter = DBusMessageIter()
    dbus_message_iter_init_append(raw, &iter)
    for value in message.body where ok { ok = append(value, to: &iter) }
    guard ok else {
      dbus_message_unref(raw)
      throw DBusError(.noMemory, "out of memory while building a message")
    }
    return raw
  }

  private static func append(_ value: DBusValue, to iter: inout DBusMessageIter) -> Bool {
    func basic<T: BitwiseCopyable>(_ type: CInt, _ value: T) -> Bool {
      var copy = value
      return dbus_message_iter_append_basic(&iter, type, &copy) != 0
    }
    switch value {
    case .byte(let v): return basic(CDBus_TYPE_BYTE, v)
    case .boolean(let v): return basic(CDBus_TYPE_BOOLEAN, dbus_bool_t(v ? 1 : 0))
    case .int16(let v): return basic(CDBus_TYPE_INT16, v)
    case .uint16(let v): return basic(CDBus_TYPE_UINT16, v)
    case .int32(let v): return basic(CDBus_TYPE_INT32, v)
    case .uint32(let v): return basic(CDBus_TYPE_UINT32, v)
    case .int64(let v): return basic(CDBus_TYPE_INT64, v)
    case .uint64(let v): return basic(CDBus_TYPE_UINT64, v)
    case .double(let v): return basic(CDBus_TYPE_DOUBLE, v)
    case .string(let v):
      return v.withCString { CDBus_iter_append_string(&iter, CDBus_TYPE_STRING, $0) } != 0
    case .objectPath(let v):
      return v.rawValue.withCString {
        CDBus_iter_append_string(&iter, CDBus_TYPE_OBJECT_PATH, $0)
      } != 0
    case .signature(let v):
      return v.rawValue.withCString {
        CDBus_iter_append_string(&iter, CDBus_TYPE_SIGNATURE, $0)
      } != 0
    case .bytes(let bytes):
      return container(CDBus_TYPE_ARRAY, "y", &iter) { sub in
        bytes.withUnsafeBufferPointer {
          CDBus_iter_append_bytes(&sub, $0.baseAddress, CInt($0.count)) != 0
        }
      }
    case .array(let element, let values):
      return container(CDBus_TYPE_ARRAY, element.rawValue, &iter) { sub in
        values.allSatisfy { append($0, to: &sub) }
      }
    case .dictionary(let key, let valueType, let entries):
      return container(CDBus_TYPE_ARRAY, "{" + key.rawValue + valueType.rawValue + "}", &iter) {
        sub in
        entries.allSatisfy { entry in
          container(CDBus_TYPE_DICT_ENTRY, nil, &sub) { pair in
            append(entry.key, to: &pair) && append(entry.value, to: &pair)
          }
        }
      }
    case .structure(let fields):
      return container(CDBus_TYPE_STRUCT, nil, &iter) { sub in
        fields.allSatisfy { append($0, to: &sub) }
      }
    case .variant(let inner):
      return container(CDBus_TYPE_VARIANT, inner.signatureString, &iter) { sub in
        append(inner, to: &sub)
      }
    }
  }

  private static func container(
    _ type: CInt, _ signature: String?, _ iter: inout DBusMessageIter,
    _ body: (inout DBusMessageIter) -> Bool
  ) -> Bool {
    var sub = DBusMessageIter()
    let opened =
      if let signature {
        signature.withCString { dbus_message_iter_open_container(&iter, type, $0, &sub) }
      } else {
        dbus_message_iter_open_container(&iter, type, nil, &sub)
      }
    guard opened != 0 else { return false }
    guard body(&sub) else {
      dbus_message_iter_abandon_container(&iter, &sub)
      return false
    }
    return dbus_message_iter_close_container(&iter, &sub) != 0
  }

  /// Reads a libdbus message into a value.
  ///
  /// libdbus has already validated every message it receives or demarshals, so names are
  /// taken as valid.
  package static func decode(_ raw: OpaquePointer) -> Message {
    var strings = StringCache(capacity: 0)
    return decode(raw, strings: &strings)
  }

  /// Reads a libdbus message into a value, taking its strings from `strings` when they
  /// were seen recently.
  package static func decode(_ raw: OpaquePointer, strings: inout StringCache) -> Message {
    var body: [DBusValue] = []
    return decode(raw, strings: &strings, body: &body)
  }

  /// Reads a libdbus message into a value as ``decode(_:strings:)`` does, its arguments
  /// into `body`'s storage when nothing else holds it.
  ///
  /// The message shares `body`'s storage. Once the message is gone (a handler on the
  /// connection's thread that reads and drops it), the storage is `body`'s alone again
  /// and the next message reuses it: no allocation for the argument array. A message that
  /// is kept (queued for a task, yielded to a stream) keeps its arguments; the next one
  /// then gets new storage, as every message did before.
  package static func decode(
    _ raw: OpaquePointer, strings: inout StringCache, body: inout [DBusValue]
  ) -> Message {
    func string(_ pointer: UnsafePointer<CChar>?) -> String? {
      pointer.map { strings.string($0) }
    }
    let kind: Message.Kind =
      switch dbus_message_get_type(raw) {
      case DBUS_MESSAGE_TYPE_METHOD_CALL: .methodCall
      case DBUS_MESSAGE_TYPE_METHOD_RETURN: .methodReturn
      case DBUS_MESSAGE_TYPE_ERROR: .error
      default: .signal
      }
    var message = Message(
      kind: kind,
      path: string(dbus_message_get_path(raw)).map(ObjectPath.init(unchecked:)),
      interface: string(dbus_message_get_interface(raw)).map(InterfaceName.init(unchecked:)),
      member: string(dbus_message_get_member(raw)).map(MemberName.init(unchecked:)),
      errorName: string(dbus_message_get_error_name(raw)).map(DBusError.Name.init(rawValue:)),
      destination: string(dbus_message_get_destination(raw)).map(BusName.init(unchecked:)),
      sender: string(dbus_message_get_sender(raw)).map(BusName.init(unchecked:)),
      serial: dbus_message_get_serial(raw),
      replySerial: dbus_message_get_reply_serial(raw),
      noReplyExpected: dbus_message_get_no_reply(raw) != 0,
      noAutoStart: dbus_message_get_auto_start(raw) == 0)
    // In place when no earlier message still shares the storage; else new storage of
    // the same capacity.
    body.removeAll(keepingCapacity: true)
    var iter = DBusMessageIter()
    if dbus_message_iter_init(raw, &iter) != 0 {
      readAll(&iter, &strings, into: &body)
      message.body = body
    }
    return message
  }

  private static func readAll(_ iter: inout DBusMessageIter, _ strings: inout StringCache)
    -> [DBusValue]
  {
    var values: [DBusValue] = []
    readAll(&iter, &strings, into: &values)
    return values
  }

  private static func readAll(
    _ iter: inout DBusMessageIter, _ strings: inout StringCache, into values: inout [DBusValue]
  ) {
    // One allocation for the usual few arguments, instead of growing 1, 2, 4.
    if values.capacity < 4 { values.reserveCapacity(4) }
    while dbus_message_iter_get_arg_type(&iter) != CDBus_TYPE_INVALID {
      values.append(read(&iter, &strings))
      dbus_message_iter_next(&iter)
    }
  }

  private static func signature(of iter: inout DBusMessageIter) -> String {
    guard let raw = dbus_message_iter_get_signature(&iter) else { return "" }
    defer { dbus_free(raw) }
    return String(cString: raw)
  }

  static func read(_ iter: inout DBusMessageIter, _ strings: inout StringCache)
    -> DBusValue
  {
    func basic<T: BitwiseCopyable>(_ initial: T) -> T {
      var value = initial
      dbus_message_iter_get_basic(&iter, &value)
      return value
    }
    let type = dbus_message_iter_get_arg_type(&iter)
    switch type {
    case CDBus_TYPE_BYTE: return .byte(basic(UInt8(0)))
    case CDBus_TYPE_BOOLEAN: return .boolean(basic(dbus_bool_t(0)) != 0)
    case CDBus_TYPE_INT16: return .int16(basic(Int16(0)))
    case CDBus_TYPE_UINT16: return .uint16(basic(UInt16(0)))
    case CDBus_TYPE_INT32: return .int32(basic(Int32(0)))
    case CDBus_TYPE_UINT32: return .uint32(basic(UInt32(0)))
    case CDBus_TYPE_INT64: return .int64(basic(Int64(0)))
    case CDBus_TYPE_UINT64: return .uint64(basic(UInt64(0)))
    case CDBus_TYPE_DOUBLE: return .double(basic(Double(0)))
    case CDBus_TYPE_STRING: return .string(strings.string(CDBus_iter_get_string(&iter)))
    case CDBus_TYPE_OBJECT_PATH:
      return .objectPath(ObjectPath(unchecked: String(cString: CDBus_iter_get_string(&iter))))
    case CDBus_TYPE_SIGNATURE:
      return .signature(Signature(unchecked: String(cString: CDBus_iter_get_string(&iter))))
    case CDBus_TYPE_UNIX_FD:
      // Descriptors are not passed on; the index alone carries no meaning here.
      return .uint32(basic(UInt32(0)))
    case CDBus_TYPE_VARIANT:
      var sub = DBusMessageIter()
      dbus_message_iter_recurse(&iter, &sub)
      return .variant(read(&sub, &strings))
    case CDBus_TYPE_STRUCT:
      var sub = DBusMessageIter()
      dbus_message_iter_recurse(&iter, &sub)
      return .structure(readAll(&sub, &strings))
    case CDBus_TYPE_ARRAY:
      let arraySignature = signature(of: &iter)
      let element = String(arraySignature.dropFirst())
      var sub = DBusMessageIter()
      dbus_message_iter_recurse(&iter, &sub)
      if element == "y" {
        var count: CInt = 0
        let pointer = CDBus_iter_get_bytes(&sub, &count)
        let bytes = pointer.map { Array(UnsafeBufferPointer(start: $0, count: Int(count))) } ?? []
        return .bytes(bytes)
      }
      if element.utf8.first == UInt8(ascii: "{") {
        let inner = element.dropFirst().dropLast()
        let key = String(inner.prefix(1))
        let valueType = String(inner.dropFirst())
        var entries: [DBusValue.DictionaryEntry] = []
        while dbus_message_iter_get_arg_type(&sub) == CDBus_TYPE_DICT_ENTRY {
          var pair = DBusMessageIter()
          dbus_message_iter_recurse(&sub, &pair)
          let key = read(&pair, &strings)
          dbus_message_iter_next(&pair)
          entries.append(.init(key, read(&pair, &strings)))
          dbus_message_iter_next(&sub)
        }
        return .dictionary(
          keyType: Signature(unchecked: key), valueType: Signature(unchecked: valueType), entries)
      }
      return .array(elementType: Signature(unchecked: element), readAll(&sub, &strings))
    default:
      return .structure([])
    }
  }
}

/// The strings of recently decoded messages, so that a connection receiving the same
/// signal over and over (the same path, interface and name each time) makes one `String`
/// of each instead of one per message.
///
/// Strings of up to 15 UTF-8 bytes are stored inline by `String` and cost no allocation,
/// so only longer ones (up to 255 bytes, the limit of a D-Bus name) are kept. A lookup is
/// a length compare and a `memcmp` per entry; entries are replaced round-robin.
package struct StringCache {
  private var entries: [String] = []
  private var next = 0
  private let capacity: Int

  /// A cache of `capacity` strings; 0 keeps none.
  package init(capacity: Int) { self.capacity = capacity }

  /// The string at `pointer`, from the cache when it holds the same bytes.
  package mutating func string(_ pointer: UnsafePointer<CChar>) -> String {
    let length = strlen(pointer)
    guard capacity > 0, length > 15, length <= 255 else { return String(cString: pointer) }
    for entry in entries where entry.utf8.count == length {
      let same = entry.utf8.withContiguousStorageIfAvailable {
        memcmp($0.baseAddress!, pointer, length) == 0
      }
      if same == true { return entry }
    }
    let made = String(cString: pointer)
    if entries.count < capacity {
      entries.append(made)
    } else {
      entries[next] = made
      next = (next + 1) % capacity
    }
    return made
  }
}
