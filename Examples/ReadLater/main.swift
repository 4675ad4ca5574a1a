// readlater: the read-later app of the handoff example. The logic is in
// Examples/Support/ReadLaterTool.swift and ReadingList.swift.
import CommandLineSupport
import HandoffExamples

await CommandRunner(ReadLaterTool.command).asyncMain(ReadLaterTool.run)
