import Foundation
import Synchronization
import MiniAppCore
import MiniAppPermissions

/// The installer's way to the permission store: the store a host handed in, or the one in the cache
/// directory, opened once when first needed and kept.
final class PermissionAccess: Sendable {
    private let given: PermissionStore?
    private let cacheDirectory: String
    private let lockTimeout: Duration
    private let opened = Mutex<PermissionStore?>(nil)

    init(store: PermissionStore?, cacheDirectory: String, lockTimeout: Duration) {
        self.given = store
        self.cacheDirectory = cacheDirectory
        self.lockTimeout = lockTimeout
    }

    /// The store, or `nil` when there is no store file yet (nothing was ever decided): a launch check
    /// never creates one.
    func store() async throws -> PermissionStore? {
        if let given { return given }
        if let store = opened.withLock({ $0 }) { return store }
        guard access(cacheDirectory + "/permissions.sqlite", F_OK) == 0 else { return nil }
        let store = try await PermissionStore.open(cacheDirectory: cacheDirectory, lockTimeout: min(lockTimeout, .seconds(10)))
        return opened.withLock { current in
            if let current { return current }
            current = store
            return store
        }
    }

    /// Whether every permission `manifest` requires is `ALLOWED` for `appId`; with no store yet, nothing is.
    func launchDecision(appId: String, manifest: BundleManifest) async throws -> LaunchDecision {
        guard let store = try await store() else {
            return PermissionStore.launchDecisionWithoutStore(manifest: manifest)
        }
        return try await store.launchDecision(appId: appId, manifest: manifest)
    }
}
