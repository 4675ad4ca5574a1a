import CommandLineSupport
import NotifyServer

await CommandRunner(Notifyd.command).asyncMain(Notifyd.run)
