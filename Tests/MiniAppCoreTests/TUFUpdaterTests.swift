import Foundation
import MiniAppTestSupport
import Testing

@testable import MiniAppCore

/// The client workflow over folders, against repositories written with python-tuf's Metadata API: a
/// target found and checked, the kept metadata, and one test per attack of TUF's threat model, each
/// ending with the target not handed out and the kept metadata as the last good refresh left it.
/// One test at a time: each runs python-tuf, and a dozen at once load the suite's busy first minutes.
@Suite(.serialized) struct TUFUpdaterTests {
    /// A repository made by `script` (which starts after ``PythonTUF/repositoryPrelude`` with `repo =
    /// Repo(sys.argv[1])` made) and a client that first trusts its `1.root.json`.
    struct Setup {
        let repository: String
        let client: String

        init(_ script: String) async throws {
            repository = try TemporaryDirectory.make().path
            client = try TemporaryDirectory.make().path + "/metadata"
            _ = try await PythonTUF.run(PythonTUF.repositoryPrelude + "repo = Repo(sys.argv[1])\n" + script, [repository])
            let executor = BlockingExecutor()
            try await TUFUpdater.initialize(folder: client, root: try TUFUpdaterTests.kept(repository + "/metadata/1.root.json"), executor: executor)
            await executor.shutdown()
        }

        /// Refreshes against the repository's `state` (its current files when `nil`) and returns the
        /// target at `path` downloaded, or throws what stopped it.
        @discardableResult
        func fetch(_ path: String? = nil, state: String? = nil, limits: TUFLimits = TUFLimits(), now: Date = Date()) async throws -> [UInt8]? {
            let base = state.map { repository + "/" + $0 } ?? repository
            let executor = BlockingExecutor()
            do {
                let remote = TUFFolderRemote(metadataFolder: base + "/metadata", targetsFolder: base + "/targets", executor: executor)
                var updater = try await TUFUpdater(folder: client, remote: remote, executor: executor, limits: limits, now: now)
                try await updater.refresh()
                var bytes: [UInt8]?
                if let path, let target = try await updater.target(path) { bytes = try await updater.download(target) }
                await executor.shutdown()
                return bytes
            } catch {
                await executor.shutdown()
                throw error
            }
        }

        /// The version of the client's kept `role` metadata, or `nil` when it keeps none.
        func keptVersion(_ role: String) -> Int? {
            guard let bytes = FileReading.contents(client + "/" + role + ".json"),
                  case .object(let fields)? = JSONReader.value(bytes, maxDepth: 32), case .object(let signed)? = fields["signed"] else { return nil }
            return TUFSigned.integer(signed["version"])
        }

        /// Expects the refresh (and the download of `path`) against `state` to fail with `role`'s
        /// `check`, nothing handed out, and the refused metadata not kept.
        func expectRefused(_ role: String, _ check: String, _ path: String? = nil, state: String? = nil, limits: TUFLimits = TUFLimits(),
                           sourceLocation: SourceLocation = #_sourceLocation) async {
            let before = keptVersion(role)
            do {
                let bytes = try await fetch(path, state: state, limits: limits)
                Issue.record("accepted (\(bytes?.count ?? 0) bytes): expected \(role) to fail (\(check))", sourceLocation: sourceLocation)
            } catch let error as TUFError {
                #expect(error.role == role && error.check.contains(check), "\(error)", sourceLocation: sourceLocation)
            } catch {
                Issue.record("not a TUF failure: \(error)", sourceLocation: sourceLocation)
            }
            #expect(keptVersion(role) == before, "the refused \(role) was kept", sourceLocation: sourceLocation)
        }
    }

    static func kept(_ path: String) throws -> [UInt8] { try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) }

    @Test func aTargetOfTheReferenceIsFoundCheckedAndItsMetadataKept() async throws {
        let setup = try await Setup("""
            repo.add_target("targets", "demo/1.0.0/demo.zip", b"zip bytes")
            repo.roles["targets"].targets["demo/1.0.0/demo.zip"].unrecognized_fields["custom"] = {"appId": "demo", "versionId": "v1", "versionTag": "1.0.0"}
            repo.publish(["targets"])
            """)
        #expect(try await setup.fetch("demo/1.0.0/demo.zip") == Array("zip bytes".utf8))
        #expect(["root", "timestamp", "snapshot", "targets"].map(setup.keptVersion) == [1, 2, 2, 2])
        let executor = BlockingExecutor()
        let remote = TUFFolderRemote(metadataFolder: setup.repository + "/metadata", targetsFolder: setup.repository + "/targets", executor: executor)
        var updater = try await TUFUpdater(folder: setup.client, remote: remote, executor: executor)
        let target = try #require(try await updater.target("demo/1.0.0/demo.zip"))
        #expect(target.custom == .object(["appId": .string("demo"), "versionId": .string("v1"), "versionTag": .string("1.0.0")]))
        #expect(try await updater.target("demo/2.0.0/demo.zip") == nil)
        await executor.shutdown()
    }

    @Test func anArbitraryTargetIsRefusedByItsHashAndItsLength() async throws {
        let setup = try await Setup("""
            repo.add_target("targets", "a.zip", b"the real bytes")
            repo.publish(["targets"])
            digest = hashlib.sha256(b"the real bytes").hexdigest()
            open(f"{repo.out}/targets/{digest}.a.zip", "wb").write(b"the evil bytes")
            repo.state("swapped")
            open(f"{repo.out}/targets/{digest}.a.zip", "wb").write(b"the real bytes and more")
            repo.state("longer")
            """)
        await setup.expectRefused("target a.zip", "sha256", "a.zip", state: "swapped")
        await setup.expectRefused("target a.zip", "longer than the 14 bytes", "a.zip", state: "longer")
    }

    @Test func aRollbackOfEachRoleIsRefused() async throws {
        let setup = try await Setup("""
            repo.add_target("targets", "a.zip", b"v2")
            repo.publish(["targets"])
            old_timestamp, old_snapshot = copy.deepcopy(repo.timestamp), copy.deepcopy(repo.snapshot)
            repo.add_target("targets", "a.zip", b"v3")
            repo.publish(["targets"])
            repo.state("v3")
            # The timestamp as it was: an older version.
            repo.write("timestamp.json", repo.signed(old_timestamp, repo.signers["timestamp"]))
            repo.state("old-timestamp")
            # A newer timestamp naming the older snapshot.
            ts = copy.deepcopy(old_timestamp)
            ts.version = 10
            repo.write("timestamp.json", repo.signed(ts, repo.signers["timestamp"]))
            repo.state("old-snapshot")
            # A newer snapshot listing the older targets.
            sn = copy.deepcopy(old_snapshot)
            sn.version = 10
            data = repo.signed(sn, repo.signers["snapshot"])
            repo.write("10.snapshot.json", data)
            ts = copy.deepcopy(old_timestamp)
            ts.version = 11
            ts.snapshot_meta = MetaFile(version=10, length=len(data), hashes={"sha256": hashlib.sha256(data).hexdigest()})
            repo.write("timestamp.json", repo.signed(ts, repo.signers["timestamp"]))
            repo.state("old-targets")
            # The first root again, as the next one.
            repo.write("2.root.json", open(f"{repo.out}/metadata/1.root.json", "rb").read())
            repo.state("old-root")
            """)
        #expect(try await setup.fetch("a.zip", state: "v3") == Array("v3".utf8))
        await setup.expectRefused("timestamp", "lower than the trusted 3 (rollback)", "a.zip", state: "old-timestamp")
        await setup.expectRefused("timestamp", "names snapshot version 2, lower than the trusted 3 (rollback)", "a.zip", state: "old-snapshot")
        await setup.expectRefused("snapshot", "lists targets.json version 2, lower than the trusted 3 (rollback)", "a.zip", state: "old-targets")
        await setup.expectRefused("root", "version 1 does not follow the trusted version 1", "a.zip", state: "old-root")
        #expect(setup.keptVersion("targets") == 3)
    }

    @Test func aFreezeIsRefusedByTheExpiryOfEachRole() async throws {
        let setup = try await Setup("""
            repo.add_target("targets", "a.zip", b"v2")
            repo.timestamp.expires = PAST
            repo.publish(["targets"])
            repo.state("expired-timestamp")
            repo.timestamp.expires = FUTURE
            repo.roles["targets"].expires = PAST
            repo.publish(["targets"])
            repo.state("expired-targets")
            """)
        await setup.expectRefused("timestamp", "expired (freeze attack?)", "a.zip", state: "expired-timestamp")
        await setup.expectRefused("targets", "expired (freeze attack?)", "a.zip", state: "expired-targets")
        // A root that has expired by the time of the refresh stops it too.
        let late = Date().addingTimeInterval(60 * 86_400)
        await #expect(throws: TUFError("root", "it expired (freeze attack?)")) { try await setup.fetch("a.zip", state: "expired-targets", now: late) }
    }

    @Test func metadataPastItsSizeLimitIsRefusedAtTheLimit() async throws {
        let setup = try await Setup("""
            repo.timestamp.unrecognized_fields["padding"] = "x" * 20000
            repo.publish(["targets"])
            repo.state("endless-timestamp")
            del repo.timestamp.unrecognized_fields["padding"]
            repo.publish(["targets"])
            path = f"{repo.out}/metadata/{repo.snapshot.version}.snapshot.json"
            open(path, "ab").write(b" " * 100000)
            repo.state("endless-snapshot")
            """)
        await setup.expectRefused("timestamp", "longer than the 16384 bytes allowed (endless data?)", state: "endless-timestamp")
        await setup.expectRefused("snapshot", "bytes allowed (endless data?)", state: "endless-snapshot")
    }

    @Test func aSnapshotThatTheTimestampDoesNotNameIsRefused() async throws {
        let setup = try await Setup("""
            repo.add_target("targets", "a.zip", b"v2")
            repo.publish(["targets"])
            other = copy.deepcopy(repo.snapshot)
            other.meta["targets.json"] = MetaFile(version=1)
            repo.write(f"{other.version}.snapshot.json", repo.signed(other, repo.signers["snapshot"]))
            repo.state("mixed")
            """)
        await setup.expectRefused("snapshot", "sha256 is not the one listed", "a.zip", state: "mixed")
    }

    @Test func aThresholdNotMetIsRefused() async throws {
        let setup = try await Setup("""
            second = CryptoSigner.generate_ecdsa()
            repo.root.add_key(second.public_key, "targets")
            repo.root.roles["targets"].threshold = 2
            repo.root.version += 1
            repo.write_root()
            repo.add_target("targets", "a.zip", b"v2")
            repo.publish(["targets"])
            repo.state("one-of-two")
            repo.signers["targets"].append(second)
            repo.publish(["targets"])
            repo.state("two-of-two")
            """)
        await setup.expectRefused("targets", "1 of the 2 signatures needed verify", "a.zip", state: "one-of-two")
        #expect(try await setup.fetch("a.zip", state: "two-of-two") == Array("v2".utf8))
    }

    @Test func aRevokedKeySignsNothing() async throws {
        let setup = try await Setup("""
            old = repo.signers["timestamp"]
            repo.rotate("timestamp")
            repo.publish(["targets"])
            repo.state("rotated")
            repo.timestamp.version += 5
            repo.write_timestamp(old)
            repo.state("old-key")
            """)
        try await setup.fetch(state: "rotated")
        await setup.expectRefused("timestamp", "0 of the 1 signatures needed verify", state: "old-key")
    }

    @Test func aChainOfThreeRootRotationsIsFollowed() async throws {
        let setup = try await Setup("""
            repo.rotate("root", "ecdsa")
            repo.rotate("root", "rsa")
            repo.rotate("root", "ed25519")
            repo.add_target("targets", "a.zip", b"v2")
            repo.publish(["targets"])
            """)
        #expect(try await setup.fetch("a.zip") == Array("v2".utf8))
        #expect(setup.keptVersion("root") == 4)
    }

    @Test func aFastForwardAttackIsRecoveredFromByRotatingTheKey() async throws {
        let setup = try await Setup("""
            # The timestamp key leaked: the attacker publishes version 1000, the client takes it.
            repo.timestamp.version = 1000
            repo.write_timestamp()
            repo.state("fast-forwarded")
            repo.timestamp.version = 2
            repo.write_timestamp()
            repo.state("not-rotated")
            # The repository rotates the timestamp key: the kept timestamp no longer guards anything.
            repo.rotate("timestamp")
            repo.add_target("targets", "a.zip", b"v2")
            repo.publish(["targets"])
            repo.state("rotated")
            """)
        try await setup.fetch(state: "fast-forwarded")
        #expect(setup.keptVersion("timestamp") == 1000)
        await setup.expectRefused("timestamp", "lower than the trusted 1000 (rollback)", state: "not-rotated")
        #expect(try await setup.fetch("a.zip", state: "rotated") == Array("v2".utf8))
        #expect(setup.keptVersion("timestamp") == 3)
    }

    @Test func aDelegationSignedByTheWrongKeyIsRefused() async throws {
        let setup = try await Setup("""
            repo.delegate("targets", "apps", ["apps/*"])
            repo.add_target("apps", "apps/a.zip", b"app")
            repo.signers["apps"] = [CryptoSigner.generate_ed25519()]
            repo.publish(["apps", "targets"])
            """)
        await setup.expectRefused("apps", "0 of the 1 signatures needed from targets's keys for it verify", "apps/a.zip")
    }

    @Test func aCachedDelegatedRoleIsCheckedAgainstTheDelegatorOfEachLookup() async throws {
        let setup = try await Setup("""
            repo.delegate("targets", "parent-a", ["team-a/*"])
            repo.delegate("targets", "parent-b", ["team-b/*"])
            through_a = repo.delegate("parent-a", "release", ["team-a/*"])
            repo.delegate("parent-b", "release", ["team-b/*"])
            repo.signers["release"] = [through_a]
            repo.add_target("release", "team-a/a.zip", b"A")
            repo.add_target("release", "team-b/b.zip", b"B")
            repo.publish(["release", "parent-a", "parent-b", "targets"])
            """)
        let executor = BlockingExecutor()
        let remote = TUFFolderRemote(metadataFolder: setup.repository + "/metadata", targetsFolder: setup.repository + "/targets", executor: executor)
        var updater = try await TUFUpdater(folder: setup.client, remote: remote, executor: executor)
        let a = try #require(try await updater.target("team-a/a.zip"))
        #expect(try await updater.download(a) == Array("A".utf8))
        await #expect(throws: TUFError("release", "0 of the 1 signatures needed from parent-b's keys for it verify")) {
            _ = try await updater.target("team-b/b.zip")
        }
        await executor.shutdown()
        // A new updater finds the kept copy and checks it against the delegator of its lookup too.
        await setup.expectRefused("release", "from parent-b's keys for it", "team-b/b.zip")
    }

    @Test func aTerminatingDelegationEndsTheSearch() async throws {
        let setup = try await Setup("""
            repo.delegate("targets", "first", ["apps/*"], terminating=True)
            repo.delegate("targets", "second", ["apps/*"])
            repo.add_target("second", "apps/a.zip", b"second")
            repo.publish(["first", "second", "targets"])
            """)
        #expect(try await setup.fetch("apps/a.zip") == nil)
        #expect(FileReading.contents(setup.client + "/first.json") != nil && FileReading.contents(setup.client + "/second.json") == nil)
    }
}
