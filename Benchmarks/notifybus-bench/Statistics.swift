/// Percentiles of a sample, by the nearest-rank method.
struct Percentiles {
  private let sorted: [Double]

  init(_ samples: [Double]) { sorted = samples.sorted() }

  /// The value below which `fraction` of the samples fall (0.5 for the median).
  subscript(fraction: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
  }
}

/// The median of several runs' figures, to damp this machine's run-to-run noise.
func median(_ values: [Double]) -> Double { Percentiles(values)[0.5] }

/// Calls per second of `body`: the best of three timed runs of at least `seconds / 3` each.
///
/// 50 warm-up calls come first. `body` returns a checksum, so its work cannot be optimized
/// away.
func rate(seconds: Double, _ body: () throws -> Int) throws -> Double {
  var checksum = 0
  for _ in 0..<50 { checksum &+= try body() }
  var best = 0.0
  let clock = ContinuousClock()
  for _ in 0..<3 {
    var iterations = 0
    let start = clock.now
    var elapsed = 0.0
    repeat {
      for _ in 0..<64 { checksum &+= try body() }
      iterations += 64
      let duration = clock.now - start
      elapsed =
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    } while elapsed < seconds / 3
    best = max(best, Double(iterations) / elapsed)
  }
  blackHole(checksum)
  return best
}

@_optimize(none)
private func blackHole(_ value: Int) {}

/// One report row over the runs of `--repeat N`: each run's row of that name, combined.
///
/// Figures are the medians of the runs' figures. The ratio is the median of the runs' ratios,
/// each taken between NotifyBus and its baseline measured side by side in one run, with their
/// range; the target is judged on that median.
struct RepeatedRow {
  /// The rows of this name, one per run that produced it, in run order.
  let runs: [BenchmarkRow]

  /// The first run's row, for what does not vary between runs (name, unit, baseline, target).
  var first: BenchmarkRow { runs[0] }
  var subject: Double { middle(runs.map(\.subject)) }
  var baseline: Double { middle(runs.map(\.baseline)) }
  var ratios: [Double] { runs.map(\.ratio) }
  var ratio: Double { middle(ratios) }
  var secondBaseline: Double? {
    let figures = runs.compactMap(\.secondBaseline)
    return figures.isEmpty ? nil : middle(figures)
  }
  var secondRatios: [Double] { runs.compactMap(\.secondRatio) }
  var secondRatio: Double? { secondRatios.isEmpty ? nil : middle(secondRatios) }

  /// Groups the rows of several runs by name, in the order the names first appear.
  static func combine(_ runs: [[BenchmarkRow]]) -> [RepeatedRow] {
    var order: [String] = []
    var byName: [String: [BenchmarkRow]] = [:]
    for row in runs.joined() {
      if byName[row.name] == nil { order.append(row.name) }
      byName[row.name, default: []].append(row)
    }
    return order.map { RepeatedRow(runs: byName[$0] ?? []) }
  }

  /// The median, the mean of the two middle values for an even count; NaN for none.
  private func middle(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    let half = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2
  }
}
