// swift-tools-version:6.1
import PackageDescription

// Every Swift target: imports are internal unless a file says otherwise, and a file sees the members of
// the modules it imports itself, so a module's public API names only what it means to expose.
let settings: [SwiftSetting] = [
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "miniapp",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "MiniAppCore", targets: ["MiniAppCore"]),
        .library(name: "MiniAppPermissions", targets: ["MiniAppPermissions"]),
        .library(name: "MiniAppKit", targets: ["MiniAppKit"]),
        .library(name: "MiniAppRegistry", targets: ["MiniAppRegistry"]),
        .library(name: "MiniAppBridge", targets: ["MiniAppBridge"]),
        .library(name: "MiniAppWebHost", targets: ["MiniAppWebHost"]),
        .executable(name: "miniapp", targets: ["miniapp"]),
        .executable(name: "miniapp-tuf-client", targets: ["miniapp-tuf-client"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        .systemLibrary(
            name: "CMiniAppArchive",
            pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"])]
        ),
        .systemLibrary(
            name: "CMiniAppOpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(name: "CMiniAppSystem"),
        // The parsers of untrusted input (archives, manifests, platform answers, cache records,
        // signatures and keys, identifiers), and the executor every module's blocking work runs on:
        // Foundation, the C libraries and NIO's thread pool only, so that the fuzzers build them as they are.
        .target(
            name: "MiniAppCore",
            dependencies: ["CMiniAppArchive", "CMiniAppOpenSSL", "CMiniAppSystem", .product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: settings
        ),
        // The permission store: SQLite (embedded, the default) or PostgreSQL (fleets).
        .target(
            name: "MiniAppPermissions",
            dependencies: [
                "MiniAppCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: settings
        ),
        // The client a host service imports: platform client, download, install, cache, launch gate.
        .target(
            name: "MiniAppKit",
            dependencies: [
                "MiniAppCore",
                "MiniAppPermissions",
                "CMiniAppSystem",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: settings
        ),
        // The publisher's side: publish into a registry folder, and serve it over the platform API.
        .target(
            name: "MiniAppRegistry",
            dependencies: [
                "MiniAppCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: settings
        ),
        // Running a mini-app: the bridge's message model and dispatcher, gated by the manifest and the
        // permission store (no server).
        .target(
            name: "MiniAppBridge",
            dependencies: [
                "MiniAppCore",
                "MiniAppPermissions",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: settings
        ),
        // The browser host: each app on its own origin in a frame of the host page, the bridge over HTTP,
        // prompts the app cannot reach (Hummingbird); `miniapp run` and Examples/HostService share it.
        .target(
            name: "MiniAppWebHost",
            dependencies: [
                "CMiniAppSystem",
                "MiniAppKit",
                "MiniAppBridge",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            // The host page's and the dialects' web code, as files, built into the binary.
            resources: [
                "bridge-core.js", "bridge-rakuten.js", "bridge-rakuten-global.js", "bridge-webkit.js", "bridge-url-scheme.js",
                "host-page.html", "host.css", "host.js", "host-chrome.js", "panel.js", "panel.css",
            ].map { .embedInCode("Resources/" + $0) },
            swiftSettings: settings
        ),
        .executableTarget(
            name: "miniapp",
            dependencies: [
                "MiniAppKit",
                "MiniAppCore",
                "MiniAppPermissions",
                "MiniAppRegistry",
                "MiniAppWebHost",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: settings
        ),
        // The public TUF conformance suite's client-under-test command line, over the library's TUF client.
        .executableTarget(
            name: "miniapp-tuf-client",
            dependencies: [
                "MiniAppKit",
                "MiniAppCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: settings
        ),
        // The reference host service (Examples/HostService): a Hummingbird service that embeds MiniAppKit.
        .executableTarget(
            name: "miniapp-host",
            dependencies: [
                "MiniAppKit",
                "MiniAppCore",
                "MiniAppPermissions",
                "MiniAppBridge",
                "MiniAppWebHost",
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            path: "Examples/HostService",
            swiftSettings: settings
        ),
        // The library snippet of the README and the DocC catalog (Examples/QuickStart), run by the tests.
        .executableTarget(
            name: "miniapp-quickstart",
            dependencies: ["MiniAppKit", "MiniAppCore", "MiniAppPermissions"],
            path: "Examples/QuickStart",
            swiftSettings: settings
        ),
        // The permission store benchmark's worker (Benchmarks/permissions).
        .executableTarget(
            name: "miniapp-store-bench", dependencies: ["MiniAppPermissions", "MiniAppCore"], path: "Benchmarks/StoreBench",
            swiftSettings: settings
        ),
        // The bridge benchmark's in-process worker (Benchmarks/bridge): what the capability check adds to a call.
        .executableTarget(
            name: "miniapp-bridge-bench", dependencies: ["MiniAppBridge", "MiniAppPermissions", "MiniAppCore"],
            path: "Benchmarks/BridgeBench", swiftSettings: settings
        ),
        // The dialect benchmark's host (Benchmarks/dialects): one store-read action through each dialect's transport.
        .executableTarget(
            name: "miniapp-dialect-bench", dependencies: ["MiniAppWebHost", "MiniAppBridge", "MiniAppKit", "MiniAppPermissions", "MiniAppCore"],
            path: "Benchmarks/DialectBench", swiftSettings: settings
        ),
        // The observers' benchmark (Benchmarks/observers): a bridge call's cost with 100 observers of its host.
        .executableTarget(
            name: "miniapp-observer-bench", dependencies: ["MiniAppWebHost", "MiniAppBridge", "MiniAppKit", "MiniAppPermissions", "MiniAppCore"],
            path: "Benchmarks/ObserverBench", swiftSettings: settings
        ),
        // The time-zone benchmark's worker (Benchmarks/tz): extraction alone, with TZ unset and set.
        .executableTarget(
            name: "miniapp-extract-bench", dependencies: ["MiniAppCore"], path: "Benchmarks/ExtractBench",
            swiftSettings: settings
        ),
        // The glibc calls the test support's process starter needs (declared only under _GNU_SOURCE).
        .target(name: "CMiniAppTestSupport", path: "Tests/CMiniAppTestSupport"),
        .target(
            name: "MiniAppTestSupport",
            dependencies: [
                "CMiniAppTestSupport",
                "MiniAppKit",
                "MiniAppCore",
                "MiniAppRegistry",
                "CMiniAppArchive",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            path: "Tests/MiniAppTestSupport",
            swiftSettings: settings
        ),
        // A test target per library module; a file that needs several modules goes with the highest.
        .testTarget(
            name: "MiniAppCoreTests",
            dependencies: ["MiniAppCore", "MiniAppTestSupport"],
            swiftSettings: settings
        ),
        .testTarget(
            name: "MiniAppPermissionsTests",
            dependencies: [
                "MiniAppPermissions", "MiniAppCore", "MiniAppTestSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: settings
        ),
        .testTarget(
            name: "MiniAppKitTests",
            dependencies: [
                "MiniAppKit", "MiniAppCore", "MiniAppPermissions", "MiniAppRegistry", "MiniAppTestSupport", "CMiniAppArchive",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: settings
        ),
        .testTarget(
            name: "MiniAppBridgeTests",
            dependencies: ["MiniAppBridge", "MiniAppPermissions", "MiniAppCore", "MiniAppTestSupport"],
            swiftSettings: settings
        ),
        .testTarget(
            name: "MiniAppRegistryTests",
            dependencies: [
                "MiniAppRegistry", "MiniAppCore",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
            ],
            swiftSettings: settings
        ),
        .testTarget(
            name: "MiniAppWebHostTests",
            dependencies: ["MiniAppWebHost", "MiniAppBridge", "MiniAppKit", "MiniAppPermissions", "MiniAppCore", "MiniAppTestSupport"],
            swiftSettings: settings
        ),
        .testTarget(
            name: "miniappTests",
            dependencies: [
                "miniapp", "miniapp-host", "miniapp-quickstart", "MiniAppKit", "MiniAppRegistry", "MiniAppTestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: settings
        ),
    ],
    swiftLanguageModes: [.v6]
)
