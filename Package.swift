// swift-tools-version: 6.2
//
// NotifyBus: the iOS share-extension handoff (items saved into an App Group container,
// a Darwin notification rung, the app draining the container) for Swift on Linux,
// over D-Bus. The targets are declared lowest layer first; the layers, and what each
// module is for, are in ARCHITECTURE.md (a layer never imports its own or a higher one).
// See also README.md and Protocol/.

import Foundation
import PackageDescription

/// The fuzz harnesses: the folder Fuzz/NAME holds the sources of the module NAMEFuzz, its seed
/// corpus and, where it has any, its libFuzzer options.
let fuzzHarnesses: [(name: String, dependencies: [Target.Dependency], hasOptions: Bool)] = [
  ("BridgeMessage", ["NotifyBridgeCore", "NotifyCore"], false),
  ("CommandLineSupport", ["CommandLineSupport"], false),
  ("ComposeSheet", ["ComposeSheet"], false),
  ("DBus", ["DBus", "DBusCore", "Notify"], true),
  ("DefaultsFileReader", ["AppGroups"], false),
  ("DesktopEntry", ["Activation"], false),
  ("ExtensionManifest", ["ExtensionItems"], true),
  ("ItemCodec", ["ExtensionItems"], false),
  ("KeyLogParser", ["AppGroups"], false),
  ("NotifydConfiguration", ["NotifyServerFiles"], false),
  ("NotifydStateFile", ["NotifyServerFiles"], false),
  ("PredicateParser", ["ExtensionItems"], false),
  ("SharedArgument", ["ExtensionItems"], false),
  ("SpoolEntryParser", ["AppGroups"], false),
  ("SpoolSegmentParser", ["AppGroups"], false),
]

/// The package's directory, for linker options that need an absolute path.
let packageDirectory = String(#filePath.dropLast("/Package.swift".count))

/// The Swift toolchain's `usr/lib/swift`, which holds the `dispatch` and `Block` headers the
/// C benchmark of the C library compiles with (SwiftPM gives C targets no path to them).
let toolchainSwiftDirectory: String = {
  for directory in (Context.environment["PATH"] ?? "").split(separator: ":") {
    let swiftc = URL(fileURLWithPath: "\(directory)/swiftc").resolvingSymlinksInPath()
    let candidate = swiftc.deletingLastPathComponent().deletingLastPathComponent()
      .appendingPathComponent("lib/swift")
    if FileManager.default.fileExists(atPath: candidate.path + "/dispatch/dispatch.h") {
      return candidate.path
    }
  }
  return "/usr/lib/swift"
}()

let package = Package(
  name: "NotifyBus",
  products: [
    .library(name: "PropertyLists", targets: ["PropertyLists"]),
    .library(name: "CommandLineSupport", targets: ["CommandLineSupport"]),
    .library(name: "AppGroups", targets: ["AppGroups"]),
    .library(name: "ExtensionItems", targets: ["ExtensionItems"]),
    .library(name: "DBus", targets: ["DBus"]),
    .library(name: "Notify", targets: ["Notify"]),
    .library(name: "Activation", targets: ["Activation"]),
    .library(name: "Handoff", targets: ["Handoff"]),
    .library(name: "NotifyServer", targets: ["NotifyServer"]),
    .executable(name: "notify-post", targets: ["notify-post"]),
    .executable(name: "notify-watch", targets: ["notify-watch"]),
    .executable(name: "notifyutil", targets: ["notifyutil"]),
    .executable(name: "notifybus", targets: ["notifybus"]),
    .executable(name: "share-extension", targets: ["share-extension"]),
    .executable(name: "readlater", targets: ["readlater"]),
    .executable(name: "notifyd", targets: ["notifyd"]),
    /// Darwin's notify(3) C API: built as libnotifybus-c.so (the `notifybus` command has the
    /// plain name), installed as libnotifybus.so.1 (its soname), notify.h.
    .library(name: "notifybus-c", type: .dynamic, targets: ["NotifyCAPI", "NotifyCAPILinkage"]),
  ],
  targets: [
    // MARK: - C system libraries

    /// libdbus-1, through pkg-config.
    ///
    /// Only `DBus` imports it.
    .systemLibrary(
      name: "CDBus",
      pkgConfig: "dbus-1",
      providers: [.apt(["libdbus-1-dev"])]
    ),
    /// libmosquitto, the MQTT client library, through pkg-config.
    ///
    /// Only `NotifyBridge` imports it (and the benchmark's C baseline).
    .systemLibrary(
      name: "CMosquitto",
      pkgConfig: "libmosquitto",
      providers: [.apt(["libmosquitto-dev"])]
    ),
    /// SQLite, for the spool benchmark's baseline (and the read-later example).
    .systemLibrary(
      name: "CSQLite",
      pkgConfig: "sqlite3",
      providers: [.apt(["libsqlite3-dev"])]
    ),

    // MARK: - Libraries, lowest layer first (the layers are in ARCHITECTURE.md)

    /// The Linux interfaces the C library's Swift modules lack (`renameat2`, `O_PATH`).
    .target(name: "CSystemShim"),
    /// Property-list values and the binary property-list format, read and written in Swift.
    ///
    /// No IPC.
    .target(name: "PropertyLists"),
    /// Argument parsing (subcommands, Darwin's ordered syntax), help, errors, exit codes,
    /// manual pages and shell completion for every executable, in the swift-argument-parser
    /// style.
    ///
    /// No Foundation, so tools start fast.
    .target(name: "CommandLineSupport"),
    /// A share extension's compose sheet for a terminal: the state machine, its drawing and
    /// the terminal's key decoding, driven by bytes; the raw-mode I/O is the caller's.
    ///
    /// No Foundation, no I/O.
    .target(name: "ComposeSheet"),
    /// notifyd's files: the state file format and the access configuration and policy.
    ///
    /// Pure Swift with no dependencies, so the parsers fuzz on their own.
    .target(name: "NotifyServerFiles"),
    /// Retains and releases a C caller's dispatch queue for NotifyCAPI, which Swift cannot.
    .target(name: "CNotifyDispatch"),
    /// The soname and symbol versions of libnotifybus.so.1, for the `notifybus-c` product only.
    .target(
      name: "NotifyCAPILinkage",
      linkerSettings: [
        .unsafeFlags([
          "-Xlinker", "-soname=libnotifybus.so.1",
          "-Xlinker", "--version-script=\(packageDirectory)/Sources/NotifyCAPI/libnotifybus.map",
        ])
      ]
    ),
    /// The D-Bus codec, I/O-free: signatures, values, object paths, errors, and the wire
    /// reader and writer that messages and the item codec share.
    ///
    /// No Foundation, no Dispatch, no dependencies.
    .target(name: "DBusCodec"),
    /// D-Bus messages and names: bus, interface and member names, bus addresses, messages and
    /// their wire form, match rules.
    ///
    /// No Foundation, no Dispatch.
    /// `package`-level POSIX helpers and the only code that talks to the file system: file
    /// descriptors, directories, atomic replacement, private directories, XDG locations,
    /// bounded reads; errno, environment, child processes.
    ///
    /// No Foundation.
    .target(name: "SystemSupport", dependencies: ["CSystemShim"]),
    .target(name: "DBusMessages", dependencies: ["DBusCodec"]),
    /// The embedded bus: a private dbus-daemon started, found and stopped on demand.
    ///
    /// No Foundation, no Dispatch.
    .target(
      name: "DBusEmbeddedBus", dependencies: ["DBusCodec", "DBusMessages", "SystemSupport"]),
    /// App Group containers: group identifiers, shared defaults and the durable item spool.
    /// It re-exports PropertyLists.
    ///
    /// No IPC.
    .target(name: "AppGroups", dependencies: ["PropertyLists", "SystemSupport"]),
    /// Share-extension items: the item model, uniform types, activation rules, manifests and the
    /// item codec (the mapping of items onto one D-Bus message, written with DBusCodec).
    ///
    /// No IPC. It re-exports PropertyLists.
    .target(name: "ExtensionItems", dependencies: ["PropertyLists", "DBusCodec", "SystemSupport"]),
    /// Reaching a bus without libdbus: which bus to use, SASL EXTERNAL, a Unix socket and the
    /// blocking one-shot client.
    ///
    /// No Foundation, no Dispatch.
    .target(
      name: "DBusTransport",
      dependencies: ["DBusCodec", "DBusMessages", "DBusEmbeddedBus", "SystemSupport"]),
    /// D-Bus without libdbus: re-exports DBusCodec, DBusMessages, DBusEmbeddedBus and
    /// DBusTransport.
    ///
    /// No Foundation, no Dispatch: `notify-post` links it into a fully static executable.
    .target(
      name: "DBusCore",
      dependencies: ["DBusCodec", "DBusMessages", "DBusEmbeddedBus", "DBusTransport"]),
    /// The only Swift code that calls libdbus: the long-lived, actor-isolated connection.
    /// It re-exports DBusCore.
    ///
    /// No Foundation.
    .target(name: "DBus", dependencies: ["DBusCore", "CDBus", "SystemSupport"]),
    /// Notification names, statuses and their mapping onto D-Bus messages, without libdbus.
    ///
    /// No Foundation, no Dispatch.
    .target(name: "NotifyCore", dependencies: ["DBusCore"]),
    /// Darwin `notify(3)` semantics over D-Bus: post, register, check, suspend, state.
    ///
    /// No Foundation.
    .target(name: "Notify", dependencies: ["NotifyCore", "DBus"]),
    /// D-Bus-activatable applications (org.freedesktop.Application: one instance, `Open` of
    /// URLs, an idle timeout), desktop entries and URL scheme handlers, and opening a URL in
    /// the application that handles it.
    .target(name: "Activation", dependencies: ["DBus", "SystemSupport"]),
    /// What the tools share (the version, `--bus`, the bus's ENVIRONMENT and FILES entries),
    /// and all of `notify-post`: no libdbus, no Dispatch, no Foundation.
    .target(
      name: "NotifyToolsCore", dependencies: ["NotifyCore", "DBusCore", "CommandLineSupport"]),
    /// What notifyd's MQTT bridge reads and writes: names to topics, the payload codec,
    /// the bridge configuration, duplicate detection and the outage queue.
    ///
    /// Pure Swift without I/O but small files, so the parsers fuzz on their own.
    .target(name: "NotifyBridgeCore", dependencies: ["NotifyCore", "SystemSupport"]),
    /// The share-extension handoff in two calls: `HandoffSender` stores items in the group's
    /// spool and rings the doorbell; `PendingImporter` drains at start and on every ring.
    .target(
      name: "Handoff",
      dependencies: [
        "Notify", "DBus", "ExtensionItems", "AppGroups", "SystemSupport", "Activation",
      ]),
    /// notifyd's MQTT bridge: the libmosquitto connections that carry posts and state
    /// between hosts. It re-exports NotifyBridgeCore.
    ///
    /// No libdbus: notifyd hands it posts and state and takes back what arrives.
    .target(name: "NotifyBridge", dependencies: ["NotifyBridgeCore", "CMosquitto"]),
    /// What the notify tools do, as testable library code; the executables only call it.
    .target(
      name: "NotifyTools",
      dependencies: ["NotifyToolsCore", "Notify", "DBus", "CommandLineSupport"]),
    /// The notify(3) C functions of `notify.h` and `notify_private.h` over Notify, with C
    /// linkage; the `notifybus-c` product makes it libnotifybus.so.1 (Protocol/c-api.md).
    .target(
      name: "NotifyCAPI",
      dependencies: ["Notify", "CNotifyDispatch", "SystemSupport"],
      exclude: ["include", "libnotifybus.map", "pkgconfig"]
    ),
    /// notifyd as a library: state, mediated posts, access control, persistence, activation.
    .target(
      name: "NotifyServer",
      dependencies: ["DBus", "NotifyCore", "NotifyServerFiles", "NotifyBridge", "SystemSupport"]
    ),
    /// What the share-extension and read-later examples do, as testable library code.
    .target(
      name: "HandoffExamples",
      dependencies: [
        "Handoff", "Notify", "DBus", "ExtensionItems", "AppGroups", "CommandLineSupport",
        "NotifyToolsCore", "CSQLite", "SystemSupport", "ComposeSheet", "Activation",
      ],
      path: "Examples/HandoffExamples",
      resources: [.copy("Manifests")]
    ),
    /// notifyd's command line: options, signals and the run loop around ``NotifyServer``.
    .target(
      name: "NotifydTool",
      dependencies: [
        "NotifyServer", "NotifyServerFiles", "NotifyToolsCore", "DBus", "CommandLineSupport",
        "SystemSupport",
      ]
    ),

    // MARK: - Tools

    /// `notify-post NAME...`: post notifications.
    .executableTarget(
      name: "notify-post",
      dependencies: ["NotifyToolsCore", "CommandLineSupport"],
      // A fully static executable starts without the dynamic loader: about 0.9 ms per post
      // here against 2.9 ms with a static standard library and libdbus. lld, from the
      // toolchain, links it without gold's warnings about glibc's static dlopen.
      linkerSettings: [.unsafeFlags(["-static-executable", "-use-ld=lld"])]
    ),
    /// `notify-watch NAME...`: print a line per notification.
    .executableTarget(name: "notify-watch", dependencies: ["NotifyTools", "CommandLineSupport"]),
    /// `notifyutil -p NAME -w NAME ...`: Darwin's notifyutil, command for command.
    .executableTarget(name: "notifyutil", dependencies: ["NotifyTools", "CommandLineSupport"]),
    /// `notifybus env|status|names|interface|stop`: the bus the tools use, and notifyd on it.
    .executableTarget(name: "notifybus", dependencies: ["NotifyTools", "CommandLineSupport"]),
    /// `notifyd`: owns org.notifybus.Notify1 and keeps state; started by D-Bus activation.
    .executableTarget(name: "notifyd", dependencies: ["NotifydTool", "CommandLineSupport"]),

    // MARK: - Examples (built with the package so they cannot rot)

    /// The README's first command: a signal round trip on the embedded bus.
    .executableTarget(
      name: "notifybus-demo",
      dependencies: ["DBus", "CommandLineSupport", "NotifyToolsCore", "SystemSupport"],
      path: "Examples/SignalDemo"
    ),
    /// `share-extension --url U --title T --image P`: the extension, with its Info.plists.
    .executableTarget(
      name: "share-extension",
      dependencies: ["HandoffExamples", "CommandLineSupport", "ComposeSheet"],
      path: "Examples/ShareExtension"
    ),
    /// `readlater watch` / `readlater list`: the app, storing reading items in SQLite.
    .executableTarget(
      name: "readlater",
      dependencies: ["HandoffExamples", "CommandLineSupport"],
      path: "Examples/ReadLater"
    ),

    // MARK: - Benchmarks

    /// The C baseline: the same measurements written directly against libdbus.
    .target(name: "CBaseline", dependencies: ["CDBus"], path: "Benchmarks/CBaseline"),
    /// The second C peer: CBaseline's D-Bus measurements on systemd's sd-bus (libsystemd),
    /// for the benchmark only.
    .target(
      name: "CSDBusBaseline", path: "Benchmarks/CSDBusBaseline",
      linkerSettings: [.linkedLibrary("systemd")]),
    /// The C baseline of the bridge benchmark: two libmosquitto clients.
    .target(name: "CMQTTBaseline", dependencies: ["CMosquitto"], path: "Benchmarks/CMQTTBaseline"),
    /// The C peer of the whole bridged journey: posters, bridges and handler on libdbus and
    /// libmosquitto.
    .target(
      name: "CBridgeBaseline", dependencies: ["CDBus", "CMosquitto", "CMQTTBaseline"],
      path: "Benchmarks/CBridgeBaseline"),
    /// The C baseline of the handoff benchmark: a Maildir watched with inotify by another process.
    .target(name: "CMaildirBaseline", path: "Benchmarks/CMaildirBaseline"),
    /// The C library's side of the notify benchmarks: CBaseline's measurements on `notify.h`.
    .target(
      name: "CNotifyBench",
      dependencies: ["NotifyCAPI"],
      path: "Benchmarks/CNotifyBench",
      cSettings: [
        .headerSearchPath("../../Sources/NotifyCAPI/include"),
        .unsafeFlags(["-fblocks", "-I", toolchainSwiftDirectory]),
      ]
    ),
    /// The C baseline for argument parsing: glibc's `getopt_long`.
    .target(name: "CCommandLineBaseline", path: "Benchmarks/CCommandLineBaseline"),
    /// `swift run -c release notifybus-bench`: every benchmark against its baseline.
    .executableTarget(
      name: "notifybus-bench",
      dependencies: [
        "DBus", "Notify", "ExtensionItems", "AppGroups", "Handoff", "NotifyServer",
        "CommandLineSupport", "NotifyToolsCore", "CBaseline", "CCommandLineBaseline", "CDBus",
        "CSQLite", "SystemSupport", "BusTestSupport", "CNotifyBench", "NotifyBridge",
        "CMQTTBaseline", "CSDBusBaseline", "CMaildirBaseline", "Activation", "CBridgeBaseline",
      ],
      path: "Benchmarks/notifybus-bench"
    ),

    // MARK: - Fuzzing (`Fuzz/run TARGET`; the harness targets are added below)

    /// Every harness by name, for the driver and the corpus replay tests.
    .target(
      name: "FuzzHarnesses",
      dependencies: fuzzHarnesses.map { .target(name: $0.name + "Fuzz") },
      path: "Fuzz/FuzzHarnesses"
    ),
    /// `notifybus-fuzz TARGET ...`: libFuzzer's driver, or without the fuzzer a replay of inputs.
    .executableTarget(
      name: "notifybus-fuzz", dependencies: ["FuzzHarnesses"], path: "Fuzz/notifybus-fuzz"),

    // MARK: - Tests, in the order of the libraries they test

    /// What every test target shares, without a bus: the built products, child processes,
    /// temporary directories, files and condition waits.
    .target(name: "TestSupport", dependencies: ["SystemSupport"], path: "Tests/TestSupport"),
    /// The `.blocking` trait: suites that block a thread for long run off the Swift pool.
    .target(name: "TestTraits", path: "Tests/TestTraits"),
    /// A private dbus-daemon per suite, for the tests and the benchmark. It re-exports
    /// TestSupport.
    .target(
      name: "BusTestSupport",
      dependencies: ["TestSupport", "DBus", "SystemSupport"],
      path: "Tests/BusTestSupport"
    ),
    .testTarget(name: "SystemSupportTests", dependencies: ["SystemSupport", "TestSupport"]),
    .testTarget(name: "PropertyListsTests", dependencies: ["PropertyLists"]),
    /// A small tool on CommandLineSupport that its tests run as a real process.
    .executableTarget(
      name: "cli-demo",
      dependencies: ["CommandLineSupport"],
      path: "Tests/CommandLineSupportDemo"
    ),
    .testTarget(
      name: "CommandLineSupportTests",
      dependencies: ["CommandLineSupport", "TestSupport", "cli-demo"]
    ),
    .testTarget(name: "NotifyServerFilesTests", dependencies: ["NotifyServerFiles"]),
    .testTarget(name: "ComposeSheetTests", dependencies: ["ComposeSheet"]),
    /// A small peer process for tests that need a second process on the bus.
    .executableTarget(
      name: "dbus-test-peer",
      dependencies: ["DBus"],
      path: "Tests/DBusTestPeer"
    ),
    .testTarget(
      name: "DBusCoreTests",
      dependencies: ["DBusCore", "DBus", "BusTestSupport", "SystemSupport", "dbus-test-peer"]
    ),
    /// Producer, consumer and defaults-writer child processes for the AppGroups tests.
    .executableTarget(
      name: "appgroups-stress",
      dependencies: ["AppGroups"],
      path: "Tests/appgroups-stress"
    ),
    .testTarget(
      name: "AppGroupsTests",
      dependencies: ["AppGroups", "TestSupport", "TestTraits", "SystemSupport", "appgroups-stress"]
    ),
    .testTarget(name: "ExtensionItemsTests", dependencies: ["ExtensionItems", "TestSupport"]),
    .testTarget(
      name: "DBusTests",
      dependencies: ["DBus", "DBusCore", "BusTestSupport", "SystemSupport", "dbus-test-peer"]
    ),
    .testTarget(name: "NotifyCoreTests", dependencies: ["NotifyCore", "DBusCore"]),
    .testTarget(
      name: "NotifyTests",
      dependencies: ["Notify", "DBus", "BusTestSupport", "SystemSupport"]
    ),
    .testTarget(
      name: "ActivationTests",
      dependencies: [
        "Activation", "DBus", "BusTestSupport", "TestTraits", "SystemSupport", "readlater",
        "share-extension",
      ]
    ),
    .testTarget(
      name: "NotifyToolsCoreTests",
      dependencies: ["NotifyToolsCore", "NotifyCore", "DBusCore", "BusTestSupport"]
    ),
    /// An extension process that sends many shares, for the handoff tests.
    .executableTarget(
      name: "handoff-stress",
      dependencies: ["Handoff", "ExtensionItems", "AppGroups"],
      path: "Tests/handoff-stress"
    ),
    .testTarget(
      name: "HandoffTests",
      dependencies: [
        "Handoff", "HandoffExamples", "ExtensionItems", "AppGroups", "Notify", "DBus",
        "BusTestSupport", "TestTraits", "SystemSupport", "share-extension", "readlater",
        "handoff-stress",
        "notifyd",
        "notifyutil",
      ]
    ),
    .testTarget(
      name: "NotifyServerTests",
      dependencies: [
        "NotifyServer", "NotifyServerFiles", "Notify", "DBus", "CommandLineSupport",
        "BusTestSupport",
        "SystemSupport", "notifyd", "notifyutil", "notifybus",
      ]
    ),
    .testTarget(
      name: "NotifyBridgeTests",
      dependencies: [
        "NotifyBridge", "NotifyBridgeCore", "Notify", "DBus", "BusTestSupport", "SystemSupport",
        "notifyd", "notifyutil", "notify-watch", "notifybus",
      ]
    ),
    .testTarget(
      name: "NotifyToolsTests",
      dependencies: [
        "NotifyTools", "NotifyToolsCore", "CommandLineSupport", "DBus", "BusTestSupport",
        "SystemSupport",
        // notify-post is not listed: as a static executable it would be linked into the
        // test bundle. `swift build --build-tests` builds it, as every product.
        "notify-watch", "notifyutil",
      ]
    ),
    /// The Debian package and Scripts/install, extracted and run (Scripts/package builds them).
    .testTarget(
      name: "PackageTests", dependencies: ["DBus", "BusTestSupport", "TestTraits", "SystemSupport"]
    ),
    /// README.md's Swift snippets, compiled against the built modules.
    .testTarget(
      name: "DocumentationTests",
      dependencies: ["Handoff", "Activation", "DBus", "Notify", "TestSupport", "SystemSupport"]
    ),
    /// The C library through C programs built with clang and gcc against an installed copy.
    .testTarget(
      name: "NotifyCAPITests",
      dependencies: ["DBus", "BusTestSupport", "SystemSupport", "notifyd"],
      exclude: ["Programs"]
    ),
    /// Every fuzz corpus, replayed through its harness.
    .testTarget(name: "FuzzTests", dependencies: ["FuzzHarnesses", "TestSupport"]),
    /// The layers of ARCHITECTURE.md, held to every module's imports and to this file.
    .testTarget(name: "ArchitectureTests", dependencies: ["TestSupport"]),

  ],
  swiftLanguageModes: [.v6]
)

package.targets += fuzzHarnesses.map { harness in
  .target(
    name: harness.name + "Fuzz", dependencies: harness.dependencies, path: "Fuzz/" + harness.name,
    exclude: harness.hasOptions ? ["corpus", "libfuzzer.options"] : ["corpus"])
}

// Settings for every Swift target, one line each with its reason.
for target in package.targets
where target.type != .system
  && ![
    "CBaseline", "CCommandLineBaseline", "CNotifyBench", "CNotifyDispatch", "NotifyCAPILinkage",
    "CSystemShim", "CMQTTBaseline", "CSDBusBaseline", "CMaildirBaseline", "CBridgeBaseline",
  ].contains(target.name)
{
  var settings = target.swiftSettings ?? []
  // SE-0335: existential types are spelled `any P`.
  settings.append(.enableUpcomingFeature("ExistentialAny"))
  // SE-0444: a file sees only the modules it imports.
  settings.append(.enableUpcomingFeature("MemberImportVisibility"))
  // SE-0409: imports are internal unless marked, so C modules stay out of public API.
  settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
  // SE-0461: nonisolated async functions run on the caller's actor.
  settings.append(.enableUpcomingFeature("NonisolatedNonsendingByDefault"))
  target.swiftSettings = settings
}
