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
