import CommandLineSupport
import NotifyToolsCore

CommandRunner(NotifyPost.command).main(NotifyPost.run)
