// swift-tools-version: 6.2
import PackageDescription

let package = Package(
  name: "NotifyBus",
  products: [
    .library(name: "AppGroups", targets: ["AppGroups"])
  ],
  targets: [
    // MARK: - AppGroups (issue 6): group containers, shared defaults, item spool, dedupe
    .target(name: "AppGroups"),
    .executableTarget(
      name: "appgroups-stress",
      dependencies: ["AppGroups"],
      path: "Tests/appgroups-stress"
    ),
    .testTarget(name: "AppGroupsTests", dependencies: ["AppGroups", "appgroups-stress"]),
    .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
    // MARK: - Benchmarks (main.swift is replaced by the lead when merging)
    .executableTarget(
      name: "notifybus-bench",
      dependencies: ["AppGroups", "CSQLite"],
      path: "Benchmarks/notifybus-bench"
    ),
  ],
  swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system {
  var settings = target.swiftSettings ?? []
  // SE-0335: spell existential types `any P`.
  settings.append(.enableUpcomingFeature("ExistentialAny"))
  // SE-0444: a file sees only the members of modules it imports itself.
  settings.append(.enableUpcomingFeature("MemberImportVisibility"))
  // SE-0409: imports are internal unless marked `public`, so Glibc stays out of the API.
  settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
  // SE-0461: nonisolated async functions run on the caller's executor.
  settings.append(.enableUpcomingFeature("NonisolatedNonsendingByDefault"))
  target.swiftSettings = settings
}
