// swift-tools-version: 6.2
import PackageDescription

let package = Package(
  name: "NotifyBus",
  products: [
    .library(name: "ExtensionItems", targets: ["ExtensionItems"])
  ],
  targets: [],
  swiftLanguageModes: [.v6]
)

// MARK: - ExtensionItems (issue 5): item model, uniform types, activation rules, item codec

package.targets += [
  .target(
    name: "ExtensionItems",
    path: "Sources/ExtensionItems"
  ),
  .testTarget(
    name: "ExtensionItemsTests",
    dependencies: ["ExtensionItems"],
    path: "Tests/ExtensionItemsTests"
  ),
  .executableTarget(
    name: "notifybus-bench",
    dependencies: ["ExtensionItems"],
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
