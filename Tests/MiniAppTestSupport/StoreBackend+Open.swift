public import MiniAppPermissions

extension StoreBackend {
    /// A new, empty store of this backend opened by the library: the one in `cacheDirectory` for SQLite,
    /// a new database of the shared cluster for PostgreSQL; with timeouts long enough for a loaded machine.
    public func openStore(cacheDirectory: String) async throws -> PermissionStore {
        let location: PermissionStoreLocation
        switch self {
        case .sqlite: location = .cache(cacheDirectory)
        case .postgres:
            let cluster = try await PostgresCluster.shared()
            location = try PermissionStoreLocation.parse(cluster.socketURL(try await cluster.createDatabase()))
        }
        return try await PermissionStore.open(location, executor: testExecutor, timeouts: PermissionStoreTimeouts(connect: .seconds(60), statement: .seconds(60)))
    }
}
