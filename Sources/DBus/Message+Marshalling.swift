import CDBus

// libdbus's own marshalling, kept as the oracle that tests and the fuzzer hold DBusCore's
// Swift wire format to.
extension Message {
  /// The message in the D-Bus wire format, as `dbus_message_marshal` writes it.
  ///
  /// A message that has not been sent has no serial; it is marshalled with serial 1,
  /// since the wire format does not allow zero.
  ///
  /// - Throws: ``DBusError`` when the message is malformed.
  ///
  /// The corresponding libdbus function is `dbus_message_marshal`.
  package func libdbusMarshalled() throws(DBusError) -> [UInt8] {
    var message = self
    if message.serial == 0 { message.serial = 1 }
    let raw = try MessageCoding.makeRawThroughIterators(message)
    defer { dbus_message_unref(raw) }
    return try MessageCoding.marshal(raw)
  }

  /// The message as ``BusConnection`` hands it to libdbus (``MessageCoding/makeRaw(_:)``),
  /// marshalled back by `dbus_message_marshal`, with the serial the libdbus message holds:
  /// the message's own, or 0 when it has none yet (the bytes then carry 0 too), which the
  /// sending connection replaces with its next.
  ///
  /// - Throws: ``DBusError`` as ``MessageCoding/makeRaw(_:)`` does.
  package func builtForSending() throws(DBusError) -> (bytes: [UInt8], serial: UInt32) {
    let raw = try MessageCoding.makeRaw(self)
    defer { dbus_message_unref(raw) }
    return (try MessageCoding.marshal(raw), dbus_message_get_serial(raw))
  }

  /// ``builtForSending()`` through the marshaller and `dbus_message_demarshal` whatever
  /// the message (``MessageCoding/makeRawThroughMarshaller(_:)``), where ``builtForSending()``
  /// builds small messages with libdbus's setters.
  ///
  /// - Throws: ``DBusError`` as ``MessageCoding/makeRaw(_:)`` does.
  package func builtThroughMarshaller() throws(DBusError) -> (bytes: [UInt8], serial: UInt32) {
    let raw = try MessageCoding.makeRawThroughMarshaller(self)
    defer { dbus_message_unref(raw) }
    return (try MessageCoding.marshal(raw), dbus_message_get_serial(raw))
  }

  /// Reads a message in the D-Bus wire format, validating all of it.
  ///
  /// - Parameter bytes: Exactly one marshalled message; untrusted input is fine.
  /// - Throws: ``DBusError`` with name ``DBusError/Name/invalidArgs`` saying what is
  ///   wrong with the bytes.
  ///
  /// The corresponding libdbus function is `dbus_message_demarshal`.
  package init(libdbusDemarshalling bytes: [UInt8]) throws(DBusError) {
    guard bytes.count >= 16 else {
      throw DBusError(
        .invalidArgs, "a marshalled message is at least 16 bytes long; got \(bytes.count)")
    }
    let needed = bytes.withUnsafeBufferPointer {
      $0.withMemoryRebound(to: CChar.self) {
        dbus_message_demarshal_bytes_needed($0.baseAddress, CInt(clamping: $0.count))
      }
    }
    guard needed == bytes.count else {
      throw DBusError(
        .invalidArgs,
        needed < 0
          ? "the bytes do not start with a valid message header"
          : "the header announces \(needed) bytes but \(bytes.count) were given")
    }
    let raw = try MessageCoding.demarshal(bytes)
    defer { dbus_message_unref(raw) }
    self = MessageCoding.decode(raw)
  }
}

extension MessageCoding {
  /// The wire form of a libdbus message, as `dbus_message_marshal` writes it.
  package static func marshal(_ raw: OpaquePointer) throws(DBusError) -> [UInt8] {
    var buffer: UnsafeMutablePointer<CChar>?
    var length: CInt = 0
    guard dbus_message_marshal(raw, &buffer, &length) != 0, let buffer else {
      throw DBusError(.noMemory, "out of memory while marshalling a message")
    }
    defer { dbus_free(buffer) }
    return buffer.withMemoryRebound(to: UInt8.self, capacity: Int(length)) {
      Array(UnsafeBufferPointer(start: $0, count: Int(length)))
    }
  }

  /// A libdbus message read from exactly one marshalled message by `dbus_message_demarshal`;
  /// the caller owns the returned reference.
  ///
  /// - Throws: ``DBusError`` ``DBusError/Name/noMemory`` when libdbus ran out of memory,
  ///   else libdbus's own error (invalid arguments), its message after `refusal`.
  package static func demarshal(
    _ bytes: [UInt8], refusal: String = "invalid marshalled message"
  ) throws(DBusError) -> OpaquePointer {
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    let raw = bytes.withUnsafeBufferPointer {
      $0.withMemoryRebound(to: CChar.self) {
        dbus_message_demarshal($0.baseAddress, CInt($0.count), &error)
      }
    }
    guard let raw else {
      if dbus_error_has_name(&error, DBUS_ERROR_NO_MEMORY) != 0 {
        throw DBusError(.noMemory, "out of memory while reading a marshalled message")
      }
      throw DBusError(error, refusal)
    }
    return raw
  }
}
