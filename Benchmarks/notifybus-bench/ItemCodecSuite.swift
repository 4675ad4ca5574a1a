enum ItemCodecSuite: BenchmarkSuite {
  static let name = "codec"
  static func run(scale: Double) async throws -> [BenchmarkRow] { [] }
}
