import CommandLineSupport
import NotifyTools

await CommandRunner(NotifyPost.command).asyncMain(NotifyPost.run)
