import CommandLineSupport
import NotifyTools

CommandRunner(NotifyPost.command).main(NotifyPost.run)
