// swift-tools-version:6.1
// libFuzzer targets for MiniAppKit's parsers of untrusted input. Build and run with Fuzz/run.
//
// The instrumented build compiles MiniAppKit's own sources without its network, database and cache
// stack (AsyncHTTPClient, NIO, GRDB, Hummingbird): Fuzz/run links them into Sources/MiniAppKit, all but
// the files listed there, so that an AddressSanitizer build takes a minute rather than nine.
import PackageDescription

let package = Package(
    name: "miniapp-fuzz",
    targets: [
        .systemLibrary(name: "CMiniAppArchive", pkgConfig: "libarchive", providers: [.apt(["libarchive-dev"])]),
        .systemLibrary(name: "CMiniAppOpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .target(name: "CMiniAppSystem"),
        // Testable, so that the fuzzers reach internal parsers (the install record's JSON reader).
        .target(name: "MiniAppKit", dependencies: ["CMiniAppArchive", "CMiniAppOpenSSL", "CMiniAppSystem"], swiftSettings: [.unsafeFlags(["-enable-testing"])]),
        .target(name: "FuzzSupport"),
        .executableTarget(name: "FuzzArchive", dependencies: ["FuzzSupport", "MiniAppKit"]),
        .executableTarget(name: "FuzzDecoders", dependencies: ["FuzzSupport", "MiniAppKit"]),
        .executableTarget(name: "FuzzSignature", dependencies: ["FuzzSupport", "MiniAppKit"]),
    ],
    swiftLanguageModes: [.v6]
)
