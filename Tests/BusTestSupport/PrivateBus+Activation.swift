import DBus

extension PrivateBus {
  /// Sets variables of the environment the bus gives the programs it starts by D-Bus
  /// activation (`UpdateActivationEnvironment`), as a desktop session does: the daemon's
  /// own environment is the test process's.
  package func updateActivationEnvironment(_ variables: [String: String]) async throws {
    let connection = try await BusConnection.connect(to: .address(address))
    let call = Message.methodCall(
      destination: .bus, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
      member: "UpdateActivationEnvironment",
      body: [
        .dictionary(
          keyType: "s", valueType: "s",
          variables.sorted { $0.key < $1.key }.map { .init(.string($0.key), .string($0.value)) })
      ])
    do {
      _ = try await connection.call(call)
    } catch {
      await connection.close()
      throw error
    }
    await connection.close()
  }
}
