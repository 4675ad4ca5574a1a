import CommandLineSupport
import NotifyTools

await CommandRunner(Notifyutil.command).asyncMain(Notifyutil.run)
