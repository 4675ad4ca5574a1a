/// Renders benchmark rows as a plain-text table.
enum Report {
  static func table(_ rows: [BenchmarkRow]) -> String {
    let header = ["benchmark", "unit", "NotifyBus", "baseline", "figure", "ratio", "target"]
    var lines = [header]
    for row in rows {
      let target: String
      if let goal = row.target {
        let met = row.higherIsBetter ? row.ratio >= goal : row.ratio <= goal
        target = (row.higherIsBetter ? "≥ " : "≤ ") + format(goal) + "x " + (met ? "met" : "MISSED")
      } else {
        target = ""
      }
      lines.append([
        row.name, row.unit, format(row.subject), row.baselineName, format(row.baseline),
        format(row.ratio) + "x", target,
      ])
    }
    let widths = header.indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
    return lines.map { line in
      line.enumerated().map { column, cell in
        cell + String(repeating: " ", count: widths[column] - cell.count)
      }.joined(separator: "  ")
    }.joined(separator: "\n")
  }

  static func format(_ value: Double) -> String {
    guard value.isFinite else { return "n/a" }
    if value >= 100 { return String(Int(value.rounded())) }
    let hundredths = Int((value * 100).rounded())
    let fraction = hundredths % 100
    return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
  }
}
