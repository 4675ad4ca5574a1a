extension NotifyWire {
  /// The name whose state reports `notifyd`'s protocol version and process id, as Darwin's
  /// `com.apple.system.notify.ipc_version` does: `(pid << 32) | serverProtocolVersion`.
  ///
  /// `notifyd` answers `GetState` for it from its own pid, and refuses `SetState` and
  /// `RestoreState` of it (`Protocol/notifyd.md`).
  public static let serverVersionName: NotifyName = "org.notifybus.notifyd.version"

  /// The version of `notifyd`'s interface (`Protocol/notifyd.md`, "Version 1").
  public static let serverProtocolVersion: UInt32 = 1

  /// The state ``serverVersionName`` has for a `notifyd` with process id `processID`.
  public static func serverVersionState(processID: UInt32) -> UInt64 {
    UInt64(processID) << 32 | UInt64(serverProtocolVersion)
  }
}
