public import DBus

/// The D-Bus interface `notifyd` serves, as constants and introspection XML.
///
/// `Protocol/notifyd-interface.xml` is ``introspectionDocument``, byte for byte; a test
/// checks it.
public enum NotifydInterface {
  /// The well-known name `notifyd` owns.
  public static let busName: BusName = "org.notifybus.Notify1"
  /// The object path it serves.
  public static let path: ObjectPath = "/org/notifybus/Notify1"
  /// The interface of its methods.
  public static let interface: InterfaceName = "org.notifybus.Notify1"

  /// The `<interface>` element.
  public static let interfaceXML = """
      <interface name="org.notifybus.Notify1">
        <!-- Sets the 64-bit state of a name (default 0). Never posts. Needs write access. -->
        <method name="SetState">
          <arg name="name" type="s" direction="in"/>
          <arg name="state" type="t" direction="in"/>
        </method>
        <!-- The state of a name; 0 when never set. Not access-checked. -->
        <method name="GetState">
          <arg name="name" type="s" direction="in"/>
          <arg name="state" type="t" direction="out"/>
        </method>
        <!-- A mediated post: checks the caller's write access, then notifyd emits the
             Posted signal of the name (see notify.md) itself. -->
        <method name="Post">
          <arg name="name" type="s" direction="in"/>
        </method>
        <!-- Sets the state only if the caller's set time (ns since the epoch) is newer than
             notifyd's; clients call it after notifyd restarts. Needs write access. -->
        <method name="RestoreState">
          <arg name="name" type="s" direction="in"/>
          <arg name="state" type="t" direction="in"/>
          <arg name="set_time_ns" type="t" direction="in"/>
          <arg name="applied" type="b" direction="out"/>
        </method>
        <!-- Every known name: name, state, posts seen on the bus; sorted by name. -->
        <method name="ListNames">
          <arg name="names" type="a(stt)" direction="out"/>
        </method>
        <!-- Every known name: name, state, when it was set, posts seen, when last posted
             (times in ns since the epoch, 0 for never); sorted by name. -->
        <method name="DescribeNames">
          <arg name="names" type="a(stttt)" direction="out"/>
        </method>
        <!-- Counters and settings; the keys are listed in notifyd.md. -->
        <method name="GetStatistics">
          <arg name="statistics" type="a{sv}" direction="out"/>
        </method>
      </interface>
    """

  /// The whole introspection document notifyd serves at ``path``.
  public static var introspectionDocument: String {
    BusConnection.introspectionDocument(interfaceXML: [interfaceXML])
  }
}
