// D-Bus without libdbus, one concept per module, lowest first. `import DBusCore` gives all
// of them, as it did when they were one module.

/// Signatures, values, object paths, errors, and the wire reader and writer.
@_exported public import DBusCodec
/// The embedded bus: a private dbus-daemon started, found and stopped on demand.
@_exported public import DBusEmbeddedBus
/// Bus, interface and member names, bus addresses, messages and their wire form, match rules.
@_exported public import DBusMessages
/// Which bus to use, SASL EXTERNAL, the Unix socket and the blocking one-shot client.
@_exported public import DBusTransport
