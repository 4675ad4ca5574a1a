// Everything in DBusCore (names, values, messages, addresses, the embedded bus) is part of
// this module's API: `import DBus` is all a client writes.
@_exported public import DBusCore

/// libdbus's C struct of the same name stays `CDBus.DBusError`.
public typealias DBusError = DBusCore.DBusError
