import Foundation
import Hummingbird
import Logging
import MiniAppBridge
import MiniAppKit
import MiniAppWebHost

// The reference host service. Settings come from the environment:
//   HOST_PLATFORM    a platform API URL, or a registry folder such as Manifests/demo/registry
//   HOST_PROJECT_ID  the host project id (a remote platform needs one)
//   HOST_CACHE_DIR   where mini-apps and the permission store are kept
//   HOST_PORT        the port to listen on, on 127.0.0.1 (0, the default, picks a free one)
//   HOST_BROWSER_PORT the browser host's port (0, the default, picks a free one)
//   HOST_DIALECT     how the apps call their host: rakuten (the default), liquidstate, forem, corva, or acme
//                    (HostDialect.swift: a dialect of this host's own)
//   HOST_PROFILE     a host profile (JSON) standing in for the host's user, as `miniapp run --host-profile`
//   HOST_ALLOW_LAUNCH 1: the service answers a closed launch gate from code (it allows what the app
//                    requires), as a host that decides for its user; every callback of the browser host is
//                    logged to stderr either way (HostObserver.swift)
// Once listening it prints `listening on http://127.0.0.1:<port>/`, and `browser host on http://localhost:<port>/`
// once the browser host (loaded apps with their bridge) listens.
let environment = ProcessInfo.processInfo.environment
guard let platformSetting = environment["HOST_PLATFORM"], let cacheDirectory = environment["HOST_CACHE_DIR"] else {
    FileHandle.standardError.write(Data("set HOST_PLATFORM and HOST_CACHE_DIR\n".utf8))
    exit(64)
}
let platform: PlatformLocation = platformSetting.hasPrefix("http://") || platformSetting.hasPrefix("https://")
    ? .remote(URL(string: platformSetting)!) : .registry(path: platformSetting)
let configuration = MiniAppConfiguration(platform: platform, projectId: environment["HOST_PROJECT_ID"], cacheDirectory: cacheDirectory)
var logger = Logger(label: "host")
logger.logLevel = .notice
let profile = try environment["HOST_PROFILE"].map { try HostProfile(json: Data(contentsOf: URL(fileURLWithPath: $0))) } ?? HostProfile()
let service = try await HostService.make(
    configuration: configuration, dialect: try hostDialect(named: environment["HOST_DIALECT"]), profile: profile,
    browserPort: Int(environment["HOST_BROWSER_PORT"] ?? "0") ?? 0, logger: logger
)
let application = Application(
    router: service.router(),
    configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: Int(environment["HOST_PORT"] ?? "0") ?? 0)),
    onServerRunning: { channel in
        FileHandle.standardOutput.write(Data("listening on http://127.0.0.1:\(channel.localAddress?.port ?? 0)/\n".utf8))
    },
    logger: logger
)
let observer = Task { [logger] in
    await service.observe(allowingLaunches: environment["HOST_ALLOW_LAUNCH"] == "1", logger: logger)
}
let browser = Task {
    try await service.browser.run { url in
        FileHandle.standardOutput.write(Data("browser host on \(url.absoluteString)\n".utf8))
    }
}
try await application.runService()
observer.cancel()
browser.cancel()
_ = await browser.result
await service.shutdown()
