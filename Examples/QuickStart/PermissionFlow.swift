import MiniAppCore
import MiniAppKit
import MiniAppPermissions

/// The README's permission flow of a host service: ask the user about what a version declares, then
/// load it; returns the folder holding its index.html.
func permissionFlow(
    appId: String, installer: BundleInstaller, store: PermissionStore,
    askUser: (_ name: String, _ reason: String?, _ required: Bool) async -> Bool
) async throws -> String {
    // snippet.begin
    // 1. Read what the version declares (the cached copy's manifest, localised).
    let record = try await installer.download(appId: appId).record
    let manifest = try await installer.manifest(of: record)

    // 2. Ask the user about what is undecided, with the manifest's reasons.
    for state in try await store.permissions(appId: appId, manifest: manifest) where state.decidedAt == nil {
        let allowed = await askUser(state.name, state.reason, state.required)   // the host's own UI
        try await store.set(appId: appId, [state.name: allowed ? .allowed : .denied])
    }

    // 3. Load: cached, intact, verified, and every required permission allowed (else launchRefused).
    let folder = try await installer.load(appId: appId).record.path

    // 4. Later, the host's message bridge checks each request of the running mini-app.
    if try await store.isAllowed(appId: appId, permission: "USER_NAME") { print("may answer with the user's name") }
    // snippet.end
    return folder
}
