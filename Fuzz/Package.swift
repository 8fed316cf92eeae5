// swift-tools-version:6.1
// libFuzzer targets for MiniAppKit's parsers of untrusted input. Build and run with Fuzz/run.
import PackageDescription

let package = Package(
    name: "miniapp-fuzz",
    dependencies: [.package(name: "miniapp", path: "..")],
    targets: [
        .target(name: "FuzzSupport"),
        .executableTarget(name: "FuzzArchive", dependencies: ["FuzzSupport", .product(name: "MiniAppKit", package: "miniapp")]),
        .executableTarget(name: "FuzzDecoders", dependencies: ["FuzzSupport", .product(name: "MiniAppKit", package: "miniapp")]),
        .executableTarget(name: "FuzzSignature", dependencies: ["FuzzSupport", .product(name: "MiniAppKit", package: "miniapp")]),
    ],
    swiftLanguageModes: [.v6]
)
