/// One line of the benchmark report: a figure for NotifyBus and for its baseline, both
/// measured in the same run of `notifybus-bench`.
struct BenchmarkRow: Sendable {
  /// What was measured, for example `signal latency p50`.
  ///
  /// Unique in a run: `--repeat` matches the rows of its runs by name.
  var name: String
  /// The unit of both figures, for example `µs` or `items/s`.
  var unit: String
  /// The figure for NotifyBus.
  var subject: Double
  /// What the baseline is, for example `C libdbus`.
  var baselineName: String
  /// The figure for the baseline, measured in the same run.
  var baseline: Double
  /// Whether a larger figure is better (throughput) or worse (latency, memory).
  var higherIsBetter: Bool
  /// The target for ``ratio``, if it has one: a minimum when higher is better,
  /// a maximum otherwise.
  var target: Double?
  /// A second peer measured in the same run, for example `C sd-bus`, printed beside the
  /// first; the target is judged against ``baseline`` only.
  var secondBaselineName: String? = nil
  /// The second peer's figure, with ``secondBaselineName``.
  var secondBaseline: Double? = nil

  /// How NotifyBus compares with the baseline: `subject / baseline`.
  ///
  /// Above 1 means NotifyBus is faster when higher is better, slower when lower is better.
  var ratio: Double { baseline == 0 ? .nan : subject / baseline }

  /// How NotifyBus compares with the second peer, `subject / secondBaseline`, if there is one.
  var secondRatio: Double? { secondBaseline.map { $0 == 0 ? .nan : subject / $0 } }

  /// Whether ``ratio`` meets ``target``; `nil` without a target.
  func meets(ratio: Double) -> Bool? {
    guard let target else { return nil }
    return higherIsBetter ? ratio >= target : ratio <= target
  }
}

/// A group of benchmarks that shares set-up, such as a private bus or a container.
protocol BenchmarkSuite {
  /// A short name used to select the suite on the command line, for example `codec`.
  static var name: String { get }
  /// Runs every benchmark of the suite once and returns its rows.
  ///
  /// - Parameter scale: 1 for the full run; smaller values (0.1) for a quick check.
  static func run(scale: Double) async throws -> [BenchmarkRow]
}
