import Foundation
import MiniAppBridge
import MiniAppCore
import MiniAppKit
import MiniAppPermissions
import MiniAppWebHost

// The dialect benchmark's host (Benchmarks/dialects): a browser host speaking one dialect, whose
// transport carries one more action, `benchRead`, answered from the permission store (a preference
// read): the same call through every dialect's transport, next to Rakuten's.
//   miniapp-dialect-bench <folder> <dialect> <state-dir>
// Prints the host page's URL, then serves until SIGINT or SIGTERM.
let arguments = CommandLine.arguments
guard arguments.count == 4, let base = BridgeDialect.builtIn[arguments[2]] else {
    FileHandle.standardError.write(Data("usage: miniapp-dialect-bench <folder> <rakuten|liquidstate|forem|corva> <state-dir>\n".utf8))
    exit(64)
}
let folder = arguments[1], state = arguments[3]
var configuration = MiniAppConfiguration(cacheDirectory: state)
configuration.offline = true
configuration.permissionStore = .sqlite(path: state + "/permissions.sqlite")
let runtime = MiniAppRuntime(configuration: configuration)
let store = try await runtime.permissionStore()
try await store.setHostRecord(appId: "bench", .preference, key: "greeting", value: "hello from the store")

/// The read every dialect's `benchRead` answers.
@Sendable func read(_ appId: String) async throws(BridgeFailure) -> String {
    do {
        return try await store.hostRecord(appId: appId, .preference, key: "greeting") ?? "missing"
    } catch {
        throw BridgeFailure(type: "MiniAppError", message: "\(error)")
    }
}

@Sendable func benchRead(appId: String, param: JSONValue) async throws(BridgeFailure) -> String { try await read(appId) }
let dialect: BridgeDialect
var customActions: [String: BridgeAction] = [:]
if base.transports.contains(.miniAppBridge) {
    // Rakuten's bridge sends a host's own action as it sends the SDK's: `executor.exec`.
    dialect = base
    customActions["benchRead"] = benchRead
} else {
    let transports = base.transports.map { transport -> BridgeDialect.Transport in
        if case .messageHandlers(let names) = transport { return .messageHandlers(names + ["benchRead"]) }
        return transport
    }
    let reply: BridgeDialect.Reply = base.transports.contains { if case .urlScheme = $0 { true } else { false } }
        ? .transport : .delivery(.function("benchDone", argument: .text))
    let bench = BridgeDialect.Action("benchRead", reply: reply, summary: "a preference read from the store") { context throws(BridgeFailure) in
        try await read(context.appId)
    }
    dialect = BridgeDialect(name: base.name, title: base.title, transports: transports, launch: base.launch, actions: base.actions + [bench], events: base.events)
}
let identity = BridgeIdentity(secret: Array(repeating: 1, count: 32))
let host = try await BrowserHost(runtime: runtime, identity: identity, dialect: dialect, customActions: customActions)
_ = try await host.develop(folder: folder, appId: "bench")
try await host.run { url in
    FileHandle.standardOutput.write(Data((url.absoluteString + "\n").utf8))
}
await runtime.shutdown()
