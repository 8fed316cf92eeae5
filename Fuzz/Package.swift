// swift-tools-version:6.1
// libFuzzer targets for MiniAppCore, the parsers of untrusted input. Build and run with Fuzz/run.
//
// MiniAppCore depends on Foundation, the C libraries and NIO's thread pool only: Fuzz/run links the main
// package's module folder here as it is, and swift-nio from the main package's checkout, so that an
// AddressSanitizer build needs no network, database or server package.
import PackageDescription

// As in the main package: imports are internal unless a file says otherwise, and a file sees the members
// of the modules it imports itself (MiniAppCore's sources are written for both).
let settings: [SwiftSetting] = [
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "miniapp-fuzz",
    dependencies: [.package(path: "../.build/checkouts/swift-nio")],
    targets: [
        .systemLibrary(name: "CMiniAppArchive", pkgConfig: "libarchive", providers: [.apt(["libarchive-dev"])]),
        .systemLibrary(name: "CMiniAppOpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .target(name: "CMiniAppSystem"),
        // Testable, so that the fuzzers reach internal parsers (the install record's JSON reader).
        .target(name: "MiniAppCore", dependencies: ["CMiniAppArchive", "CMiniAppOpenSSL", "CMiniAppSystem", .product(name: "NIOPosix", package: "swift-nio")], swiftSettings: settings + [.unsafeFlags(["-enable-testing"])]),
        .target(name: "FuzzSupport", swiftSettings: settings),
        .executableTarget(name: "FuzzArchive", dependencies: ["FuzzSupport", "MiniAppCore"], swiftSettings: settings),
        .executableTarget(name: "FuzzDecoders", dependencies: ["FuzzSupport", "MiniAppCore"], swiftSettings: settings),
        .executableTarget(name: "FuzzSignature", dependencies: ["FuzzSupport", "MiniAppCore"], swiftSettings: settings),
    ],
    swiftLanguageModes: [.v6]
)
