// readlater: the read-later app of the handoff example. The logic is in
// Examples/HandoffExamples/ReadLaterTool.swift and ReadingList.swift.
import HandoffExamples

await ReadLaterTool.main(Array(CommandLine.arguments.dropFirst()))
