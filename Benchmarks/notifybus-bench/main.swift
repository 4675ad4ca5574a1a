// Throwaway runner for the AppGroups branch; the lead replaces this file when merging.
import Foundation

let scale = CommandLine.arguments.dropFirst().first.flatMap(Double.init) ?? 1
for row in try await SpoolSuite.run(scale: scale) {
  print(
    "\(row.name) | \(row.unit) | NotifyBus \(String(format: "%.0f", row.subject)) | "
      + "\(row.baselineName) \(String(format: "%.0f", row.baseline)) | ratio "
      + String(format: "%.2f", row.ratio))
}
