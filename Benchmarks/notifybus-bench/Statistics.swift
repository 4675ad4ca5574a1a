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
