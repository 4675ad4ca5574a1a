// swift-tools-version: 6.2
import PackageDescription

let package = Package(
  name: "NotifyBus",
  products: [
    .library(name: "CommandLineSupport", targets: ["CommandLineSupport"])
  ],
  targets: [],
  swiftLanguageModes: [.v6]
)

// MARK: - CommandLineSupport: argv parsing, help, errors and exit codes for every executable

package.targets += [
  .target(
    name: "CommandLineSupport",
    path: "Sources/CommandLineSupport"
  ),
  .executableTarget(
    name: "cli-demo",
    dependencies: ["CommandLineSupport"],
    path: "Tests/CommandLineSupportDemo"
  ),
  .testTarget(
    name: "CommandLineSupportTests",
    dependencies: ["CommandLineSupport", "cli-demo"],
    path: "Tests/CommandLineSupportTests"
  ),
  .target(
    name: "CCommandLineBaseline",
    path: "Benchmarks/CCommandLineBaseline"
  ),
  .executableTarget(
    name: "notifybus-bench",
    dependencies: ["CommandLineSupport", "CCommandLineBaseline"],
    path: "Benchmarks/notifybus-bench"
  ),
]

// MARK: - Standard settings for every non-system target

for target in package.targets where target.type != .system {
  var settings = target.swiftSettings ?? []
  settings.append(contentsOf: [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
  ])
  target.swiftSettings = settings
}
