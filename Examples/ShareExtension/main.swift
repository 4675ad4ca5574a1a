// share-extension: the read-later example's share extension. The logic is in
// Examples/HandoffExamples/ShareExtensionTool.swift and the compose sheet in
// Sources/ComposeSheet; TerminalComposer.swift puts the sheet on a raw-mode terminal.
import CommandLineSupport
import HandoffExamples

await CommandRunner(ShareExtensionTool.command).asyncMain { arguments in
  try await ShareExtensionTool.run(arguments, terminal: TerminalComposer.open(forced:))
}
