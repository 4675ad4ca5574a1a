// share-extension: the read-later example's share extension. The logic is in
// Examples/HandoffExamples/ShareExtensionTool.swift.
import CommandLineSupport
import HandoffExamples

await CommandRunner(ShareExtensionTool.command).asyncMain(ShareExtensionTool.run)
