/// One line of the benchmark report: a figure for NotifyBus and for its baseline, both
/// measured in the same run of `notifybus-bench`.
struct BenchmarkRow: Sendable {
  /// What was measured, for example `signal latency p50`.
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

  /// How NotifyBus compares with the baseline: `subject / baseline`.
  ///
  /// Above 1 means NotifyBus is faster when higher is better, slower when lower is better.
  var ratio: Double { baseline == 0 ? .nan : subject / baseline }
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
