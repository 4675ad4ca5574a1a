/// Renders benchmark rows as a plain-text table.
///
/// One run prints each row's figures and ratio. Several runs (`--repeat N`) print the
/// median figures, the median ratio and the range of the runs' ratios. Rows with a second
/// peer (``BenchmarkRow/secondBaseline``) add its figure and ratio at the end.
enum Report {
  static func table(_ runs: [[BenchmarkRow]]) -> String {
    let rows = RepeatedRow.combine(runs)
    let repeated = runs.count > 1
    let hasSecond = rows.contains { $0.secondBaseline != nil }
    var header = ["benchmark", "unit", "NotifyBus", "baseline", "figure", "ratio"]
    if repeated { header.append("range") }
    header.append("target")
    if hasSecond {
      header += ["second peer", "figure", "ratio"]
      if repeated { header.append("range") }
    }
    var lines = [header]
    for row in rows {
      let first = row.first
      var line = [
        first.name, first.unit, format(row.subject), first.baselineName, format(row.baseline),
        format(row.ratio) + "x",
      ]
      if repeated { line.append(range(row.ratios)) }
      if let goal = first.target, let met = first.meets(ratio: row.ratio) {
        line.append(
          (first.higherIsBetter ? "≥ " : "≤ ") + format(goal) + "x " + (met ? "met" : "MISSED"))
      } else {
        line.append("")
      }
      if hasSecond {
        if let name = first.secondBaselineName, let figure = row.secondBaseline,
          let ratio = row.secondRatio
        {
          line += [name, format(figure), format(ratio) + "x"]
          if repeated { line.append(range(row.secondRatios)) }
        } else {
          line += ["", "", ""] + (repeated ? [""] : [])
        }
      }
      lines.append(line)
    }
    let widths = header.indices.map { column in lines.map { $0[column].count }.max() ?? 0 }
    let table = lines.map { line in
      line.enumerated().map { column, cell in
        cell + String(repeating: " ", count: widths[column] - cell.count)
      }.joined(separator: "  ")
    }.joined(separator: "\n")
    guard repeated else { return table }
    return "median of \(runs.count) runs; range: the lowest and highest ratio of the runs\n"
      + table
  }

  /// `0.91–1.07x`: the lowest and highest of `ratios`.
  static func range(_ ratios: [Double]) -> String {
    guard let low = ratios.min(), let high = ratios.max() else { return "" }
    return format(low) + "–" + format(high) + "x"
  }

  static func format(_ value: Double) -> String {
    guard value.isFinite else { return "n/a" }
    if value >= 100 { return String(Int(value.rounded())) }
    let hundredths = Int((value * 100).rounded())
    let fraction = hundredths % 100
    return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
  }
}
