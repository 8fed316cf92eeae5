import Foundation
import Synchronization
import MiniAppCore
import MiniAppPermissions
import Logging

/// The installer's way to the permission store: the store a host handed in, or the configured one
/// (by default the SQLite store in the cache directory), opened once when first needed and kept.
package final class PermissionAccess: Sendable {
    private let given: PermissionStore?
    private let location: PermissionStoreLocation
    private let lockTimeout: Duration
    private let timeouts: PermissionStoreTimeouts
    private let executor: BlockingExecutor
    private let opened = Mutex<PermissionStore?>(nil)

    init(store: PermissionStore?, configuration: MiniAppConfiguration, executor: BlockingExecutor) {
        self.executor = executor
        self.given = store
        self.location = configuration.permissionStoreLocation
        self.lockTimeout = min(configuration.lockTimeout, .seconds(10))
        self.timeouts = configuration.permissionStoreTimeouts
    }

    /// The store, or `nil` when it is a SQLite file that does not exist yet (nothing was ever decided):
    /// a launch check never creates one. A PostgreSQL store is always asked: when it cannot be reached,
    /// the launch is refused.
    func store() async throws -> PermissionStore? {
        if let given { return given }
        if let store = opened.withLock({ $0 }) { return store }
        if case .sqlite(let path) = location, access(path, F_OK) != 0 { return nil }
        return try await open(lockTimeout: lockTimeout, logger: nil)
    }

    /// The store, opened now (and created when it is a SQLite file that does not exist yet) unless it
    /// is open already: for the callers that read and write decisions. `lockTimeout` and `logger` apply
    /// only when it is opened here.
    func openedStore(lockTimeout: Duration, logger: Logger) async throws -> PermissionStore {
        if let given { return given }
        if let store = opened.withLock({ $0 }) { return store }
        return try await open(lockTimeout: lockTimeout, logger: logger)
    }

    private func open(lockTimeout: Duration, logger: Logger?) async throws -> PermissionStore {
        let store = try await PermissionStore.open(
            location, executor: executor, lockTimeout: lockTimeout, timeouts: timeouts,
            logger: logger ?? Logger(label: "miniapp.permissions", factory: { _ in SwiftLogNoOpLogHandler() })
        )
        let kept = opened.withLock { current in
            if let current { return current }
            current = store
            return store
        }
        if kept !== store { await store.close() }
        return kept
    }

    /// Whether every permission `manifest` requires is `ALLOWED` for `appId`; with no store yet, nothing is.
    func launchDecision(appId: String, manifest: BundleManifest) async throws -> LaunchDecision {
        guard let store = try await store() else {
            return PermissionStore.launchDecisionWithoutStore(manifest: manifest)
        }
        return try await store.launchDecision(appId: appId, manifest: manifest)
    }

    /// Closes the store this opened itself (never one a host handed in).
    func close() async {
        if let store = opened.withLock({ current in defer { current = nil }; return current }) { await store.close() }
    }
}
