// swift-tools-version:6.1
// libFuzzer targets for MiniAppCore, the parsers of untrusted input. Build and run with Fuzz/run.
//
// MiniAppCore depends on Foundation and the C libraries only: Fuzz/run links the main package's module
// folder here as it is, so that an AddressSanitizer build takes seconds and needs no network, database
// or server package.
import PackageDescription

let package = Package(
    name: "miniapp-fuzz",
    targets: [
        .systemLibrary(name: "CMiniAppArchive", pkgConfig: "libarchive", providers: [.apt(["libarchive-dev"])]),
        .systemLibrary(name: "CMiniAppOpenSSL", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .target(name: "CMiniAppSystem"),
        // Testable, so that the fuzzers reach internal parsers (the install record's JSON reader).
        .target(name: "MiniAppCore", dependencies: ["CMiniAppArchive", "CMiniAppOpenSSL", "CMiniAppSystem"], swiftSettings: [.unsafeFlags(["-enable-testing"])]),
        .target(name: "FuzzSupport"),
        .executableTarget(name: "FuzzArchive", dependencies: ["FuzzSupport", "MiniAppCore"]),
        .executableTarget(name: "FuzzDecoders", dependencies: ["FuzzSupport", "MiniAppCore"]),
        .executableTarget(name: "FuzzSignature", dependencies: ["FuzzSupport", "MiniAppCore"]),
    ],
    swiftLanguageModes: [.v6]
)
