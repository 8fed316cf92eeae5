// The README's and the DocC catalog's library snippet, compiled and run by the tests (DocumentationTests)
// against the demo registry: `miniapp-quickstart <registry folder> <cache folder>`. What lies between
// the snippet markers is what the documents show, byte for byte.
import MiniAppCore
import MiniAppKit
import MiniAppPermissions

let registry = CommandLine.arguments[1]
let cache = CommandLine.arguments[2]

// snippet.begin
let configuration = MiniAppConfiguration(platform: .registry(path: registry), cacheDirectory: cache)
// One runtime for the whole host (executor, platform, store, cache, installer), shared by every request.
let runtime = MiniAppRuntime(configuration: configuration)
let platform = try runtime.platform()
let store = try await runtime.permissionStore()
let installer = try runtime.installer()

for app in try await platform.listApps() { print(app.id, app.version.versionId) }

do {
    _ = try await installer.load(appId: "hello")
} catch PermissionStoreError.launchRefused(_, let missing) {
    // The launch gate: hello requires USER_NAME. Ask the user, then record the decision.
    print("hello needs", missing)
    try await store.set(appId: "hello", ["USER_NAME": .allowed])
}
let outcome = try await installer.load(appId: "hello")   // cached, intact, verified, allowed
print(outcome.record.path)                                // the folder holding index.html
print(try await store.isAllowed(appId: "hello", permission: "USER_NAME"))   // a bridge asks

// snippet.end

// The permission flow (PermissionFlow.swift), for weather, with a user who allows everything asked.
print(try await permissionFlow(appId: "weather", installer: installer, store: store) { name, _, _ in
    print("asked about", name)
    return true
})

await runtime.shutdown()
