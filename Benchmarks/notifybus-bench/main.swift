// Throwaway driver for this branch; the lead replaces it when merging.
let scale = CommandLine.arguments.dropFirst().first.flatMap(Double.init) ?? 1
for row in try await ItemCodecSuite.run(scale: scale) {
  print(
    "\(row.name)\t\(row.subject) \(row.unit)\t\(row.baselineName) \(row.baseline)\t\(row.ratio)x")
}
