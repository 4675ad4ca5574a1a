import CommandLineSupport
import NotifydTool

await CommandRunner(Notifyd.command).asyncMain(Notifyd.run)
