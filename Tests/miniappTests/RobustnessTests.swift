import Foundation
import MiniAppKit
import MiniAppCore
import MiniAppPermissions
import MiniAppTestSupport
import Testing

/// Whether this machine lets the tests mount a small tmpfs (root in a container that allows it).
let canMountTmpfs: Bool = {
    guard getuid() == 0, let directory = try? TemporaryDirectory.make() else { return false }
    defer { try? FileManager.default.removeItem(at: directory) }
    guard runToolBlocking("/bin/mount", ["-t", "tmpfs", "-o", "size=1m", "tmpfs", directory.path]) == 0 else { return false }
    return runToolBlocking("/bin/umount", [directory.path]) == 0
}()

/// Printable text that barely compresses, so that zips are nearly as large as what they hold.
func noise(_ count: Int, seed: UInt64) -> String {
    var state = seed
    // Through a buffer pointer: Array.append byte by byte is slow in a debug build.
    let bytes = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
        for index in 0..<count {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            buffer[index] = 0x21 + UInt8(truncatingIfNeeded: state >> 33) % 94
        }
        initialized = count
    }
    return String(decoding: bytes, as: UTF8.self)
}

@Suite struct RobustnessTests {
    let work = try! TemporaryDirectory.make().path

    @Test(.enabled(if: canMountTmpfs), arguments: [6_000_000, 2_600_000])
    func aFullDiskIsALocalIOErrorAndTheCacheStaysIntact(payload: Int) async throws {
        let cache = work + "/small"
        try FileManager.default.createDirectory(atPath: cache, withIntermediateDirectories: true)
        #expect(await runTool("/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", cache]) == 0)
        defer { runToolBlocking("/bin/umount", [cache]) }
        let app = try ServedApp(files: BundleFactory.helloFiles.merging(["big.txt": noise(payload, seed: 7)]) { $1 })
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let before = CacheSnapshot(cache)
            // Patient timeouts: this is about the disk, and a loaded machine must not turn it into a 69.
            let config = work + "/patient-config.json"
            try writeTestFile(config, #"{"timeouts": {"readSeconds": 60}}"#)
            let result = try await runCached(server, cache: cache, ["download", "app-hello"], environment: ["MINIAPP_CONFIG": config])
            expectFailure(result, status: 74, mentioning: "disk space")
            #expect(CacheSnapshot(cache) == before)
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
        }
    }

    @Test func aLockHeldTooLongIsBusy() async throws {
        let app = try ServedApp()
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let cache = work + "/cache"
            let namespace = CacheNamespace(platform: .remote(server.baseURL), projectId: "proj-1")
            try FileManager.default.createDirectory(atPath: cache + "/locks", withIntermediateDirectories: true)
            let descriptor = open(cache + "/locks/\(namespace.key)@app-hello@ver-1.lock", O_RDWR | O_CREAT, 0o644)
            #expect(flock(descriptor, LOCK_EX) == 0)
            defer { close(descriptor) }
            let config = work + "/config.json"
            try writeTestFile(config, #"{"lockTimeoutSeconds": 1, "retry": {"initialDelayMs": 10}}"#)
            let result = try await runCached(server, cache: cache, ["download", "app-hello", "--version", "ver-1"], environment: ["MINIAPP_CONFIG": config])
            expectFailure(result, status: 73, mentioning: "locked")
            #expect(CacheSnapshot(cache).files.isEmpty)
        }
    }

    @Test func killsAtManyPointsOfAnInstallNeverLeaveAHalfVersion() async throws {
        let files = BundleFactory.helloFiles.merging((0..<200).map { ("assets/a\($0).txt", noise(20_000, seed: UInt64($0))) }) { $1 }
        let app = try ServedApp(files: files)
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let cache = work + "/cache"
            for delay in [0, 10, 30, 60, 100, 150, 220, 300, 450] {
                let process = try CommandRunner.start(["download", "app-hello", "--force"], environment: [
                    "MINIAPP_PLATFORM": server.baseURL.absoluteString, "MINIAPP_PROJECT_ID": "proj-1", "MINIAPP_CACHE_DIR": cache, "HOME": work,
                ])
                try await Task.sleep(for: .milliseconds(delay))
                process.kill(SIGKILL)
                await process.exited()
                // Whatever is visible as installed is complete and intact.
                let view = BundleCache(root: cache, namespace: CacheNamespace(platform: .remote(server.baseURL), projectId: "proj-1"), executor: testExecutor)
                for record in view.records() {
                    #expect(view.check(record, thorough: true).intact, "a killed install (after \(delay) ms) left a damaged version visible")
                }
            }
            let next = try await runCached(server, cache: cache, ["download", "app-hello", "--json"])
            #expect(next.status == 0, "stderr: \(next.stderr)")
            #expect(CacheSnapshot(cache).leftovers.isEmpty, "the next run cleaned what the killed ones left")
            let verify = try await runCached(server, cache: cache, ["cache", "verify"])
            #expect(verify.status == 0)
        }
    }
}

@Suite struct MixedConcurrencyTests {
    @Test func downloadsPrunesVerifiesAndGrantsAtOnceKeepEverythingConsistent() async throws {
        let work = try TemporaryDirectory.make().path
        let app = try ServedApp(versions: ["ver-1", "ver-2", "ver-3", "ver-4"])
        try await withTestServer({ [app] in app.fixture.handle($0) }) { server in
            let cache = work + "/cache"
            var commands: [[String]] = []
            for version in ["ver-1", "ver-2", "ver-3", "ver-4"] { commands.append(["download", "app-hello", "--version", version]) }
            commands += [["cache", "prune", "--keep", "2"], ["cache", "prune", "--max-bytes", "1"], ["cache", "verify"], ["cache", "list", "--json"]]
            commands += [["permissions", "grant", "app-hello", "USER_NAME"], ["permissions", "grant", "app-hello", "LOCATION"], ["permissions", "deny", "app-hello", "POINTS"]]
            let results = try await withThrowingTaskGroup(of: ([String], CommandResult).self) { group in
                for arguments in commands {
                    group.addTask { (arguments, try await runCached(server, cache: cache, arguments)) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            for (arguments, result) in results where arguments.first != "cache" || arguments.dropFirst().first != "verify" {
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
            }
            // Whatever survived the prunes is complete and intact, and nothing half-done is left.
            let view = BundleCache(root: cache, namespace: CacheNamespace(platform: .remote(server.baseURL), projectId: "proj-1"), executor: testExecutor)
            for record in view.records() {
                #expect(view.check(record, thorough: true).intact)
            }
            #expect(CacheSnapshot(cache).leftovers.isEmpty)
            let stored = try await PermissionStore.open(cacheDirectory: cache, executor: testExecutor).stored(appId: "app-hello")
            #expect(Set(stored.map(\.name)) == [KnownPermission.userName.rawValue, KnownPermission.location.rawValue, KnownPermission.points.rawValue])
            let verify = try await runCached(server, cache: cache, ["cache", "verify"])
            #expect(verify.status == 0, "stderr: \(verify.stderr)")
        }
    }
}
