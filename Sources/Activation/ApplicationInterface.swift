public import DBus

/// The `org.freedesktop.Application` interface of the Desktop Entry Specification.
public enum ApplicationInterface {
  /// `org.freedesktop.Application`.
  public static let name: InterfaceName = "org.freedesktop.Application"
  /// `Activate(a{sv} platform_data)`: started or raised with nothing to open.
  public static let activate: MemberName = "Activate"
  /// `Open(as uris, a{sv} platform_data)`: open these URIs.
  public static let open: MemberName = "Open"
  /// `ActivateAction(s action_name, av parameter, a{sv} platform_data)`: a desktop action.
  public static let activateAction: MemberName = "ActivateAction"

  /// The interface's introspection element, as the application serves it.
  public static let introspectionXML = """
      <interface name="org.freedesktop.Application">
        <method name="Activate">
          <arg type="a{sv}" name="platform_data" direction="in"/>
        </method>
        <method name="Open">
          <arg type="as" name="uris" direction="in"/>
          <arg type="a{sv}" name="platform_data" direction="in"/>
        </method>
        <method name="ActivateAction">
          <arg type="s" name="action_name" direction="in"/>
          <arg type="av" name="parameter" direction="in"/>
          <arg type="a{sv}" name="platform_data" direction="in"/>
        </method>
      </interface>
    """

  /// A call of `member` to the application `id`.
  public static func call(_ member: MemberName, to id: ApplicationID, body: [DBusValue])
    -> Message
  {
    .methodCall(
      destination: id.busName, path: id.objectPath, interface: name, member: member, body: body)
  }

}
