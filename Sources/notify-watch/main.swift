import CommandLineSupport
import NotifyTools

await CommandRunner(NotifyWatch.command).asyncMain(NotifyWatch.run)
