// Throwaway runner for the CommandLineSupport suite; the lead replaces this file on merge.

let scale = CommandLine.arguments.dropFirst().first.flatMap(Double.init) ?? 1
for row in try await CommandLineSuite.run(scale: scale) {
  let ratio = (row.ratio * 100).rounded() / 100
  print(
    "\(row.name): \(row.subject) \(row.unit) vs \(row.baselineName) \(row.baseline) \(row.unit) (ratio \(ratio))"
  )
}
