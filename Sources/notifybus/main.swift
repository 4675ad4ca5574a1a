// notifybus: which bus the tools use and why, and what notifyd on it holds. The logic is
// in Sources/NotifyTools/NotifyBusTool.swift.
import CommandLineSupport
import NotifyTools

await CommandRunner(NotifyBusTool.command).asyncMain(NotifyBusTool.run)
