extension PythonTUF {
    /// Python that defines `Repo`, a TUF repository written with python-tuf's Metadata API into
    /// `<out>/metadata` and `<out>/targets` with consistent snapshots, as a registry publishes one:
    /// `add_target`, `delegate`, `publish` (the changed targets roles, then snapshot and timestamp),
    /// `rotate` (a new root signed by the old and new root keys), `write_root`; every role key is
    /// Ed25519 unless asked otherwise. A script starts with it and then makes its states.
    public static let repositoryPrelude = """
        import copy, hashlib, os, sys
        from datetime import datetime, timedelta, timezone
        from urllib import parse
        from securesystemslib.signer import CryptoSigner
        from tuf.api.metadata import (DelegatedRole, Delegations, Metadata, MetaFile, Root, Snapshot,
            TargetFile, Targets, Timestamp)
        from tuf.api.serialization.json import JSONSerializer
        NOW = datetime.now(timezone.utc).replace(microsecond=0)
        FUTURE, PAST = NOW + timedelta(days=30), NOW - timedelta(days=1)

        class Repo:
            def __init__(self, out):
                self.out = out
                os.makedirs(f"{out}/metadata", exist_ok=True)
                os.makedirs(f"{out}/targets", exist_ok=True)
                self.signers = {role: [CryptoSigner.generate_ed25519()] for role in ("root", "timestamp", "snapshot", "targets")}
                self.root = Root(expires=FUTURE, consistent_snapshot=True)
                for role in ("root", "timestamp", "snapshot", "targets"):
                    self.root.add_key(self.signers[role][0].public_key, role)
                self.roles = {"targets": Targets(expires=FUTURE)}
                self.snapshot = Snapshot(expires=FUTURE)
                self.timestamp = Timestamp(expires=FUTURE)
                self.write_root()
                self.publish(["targets"], bump=False)

            def signed(self, signed, signers):
                metadata = Metadata(signed)
                for signer in signers:
                    metadata.sign(signer, append=True)
                return metadata.to_bytes(JSONSerializer(compact=False))

            def write(self, name, data):
                with open(f"{self.out}/metadata/{name}", "wb") as f:
                    f.write(data)

            def write_root(self, extra=()):
                data = self.signed(self.root, list(self.signers["root"]) + list(extra))
                self.write(f"{self.root.version}.root.json", data)
                return data

            def rotate(self, role, scheme="ed25519"):
                # A new key for `role` instead of the old; the new root is signed by the old and new root keys.
                new = getattr(CryptoSigner, "generate_" + scheme)()
                old = self.signers[role]
                for signer in old:
                    self.root.revoke_key(signer.public_key.keyid, role)
                self.root.add_key(new.public_key, role)
                self.root.version += 1
                self.signers[role] = [new]
                return self.write_root(extra=old if role == "root" else ())

            def add_target(self, role, path, content):
                digest = hashlib.sha256(content).hexdigest()
                folder, _, name = path.rpartition("/")
                os.makedirs(f"{self.out}/targets/{folder}", exist_ok=True)
                with open(f"{self.out}/targets/{folder + '/' if folder else ''}{digest}.{name}", "wb") as f:
                    f.write(content)
                self.roles[role].targets[path] = TargetFile.from_data(path, content, ["sha256"])

            def delegate(self, delegator, name, paths, terminating=False, signer=None):
                signer = signer or CryptoSigner.generate_ed25519()
                parent = self.roles[delegator]
                if parent.delegations is None:
                    parent.delegations = Delegations(keys={}, roles={})
                parent.delegations.keys[signer.public_key.keyid] = signer.public_key
                parent.delegations.roles[name] = DelegatedRole(name, [signer.public_key.keyid], 1, terminating, paths)
                self.signers.setdefault(name, []).append(signer)
                self.roles.setdefault(name, Targets(expires=FUTURE))
                return signer

            def publish(self, roles, bump=True, snapshot_signers=None, timestamp_signers=None):
                for name in roles:
                    role = self.roles[name]
                    if bump:
                        role.version += 1
                    self.write(f"{role.version}.{parse.quote(name, '')}.json", self.signed(role, self.signers[name]))
                    self.snapshot.meta[f"{name}.json"] = MetaFile(version=role.version)
                if bump:
                    self.snapshot.version += 1
                data = self.signed(self.snapshot, snapshot_signers or self.signers["snapshot"])
                self.write(f"{self.snapshot.version}.snapshot.json", data)
                self.timestamp.snapshot_meta = MetaFile(version=self.snapshot.version, length=len(data),
                    hashes={"sha256": hashlib.sha256(data).hexdigest()})
                if bump:
                    self.timestamp.version += 1
                self.write_timestamp(timestamp_signers)

            def state(self, name):
                # The repository as it is now, kept as `<out>/<name>/metadata` and `<out>/<name>/targets`.
                import shutil
                shutil.copytree(f"{self.out}/metadata", f"{self.out}/{name}/metadata")
                shutil.copytree(f"{self.out}/targets", f"{self.out}/{name}/targets")

            def write_timestamp(self, signers=None):
                self.write("timestamp.json", self.signed(self.timestamp, signers or self.signers["timestamp"]))

        """
}

extension PythonTUF {
    /// Runs python-tuf's `ngclient.Updater` against a TUF repository: the folder `repository` (its
    /// `metadata/` and `targets/`, served over HTTP on 127.0.0.1 by Python's own server), or the one at
    /// `base` (`<base>/metadata/`, `<base>/targets/`). Its metadata is kept in `client`, first trusting
    /// `trusting` (by default the folder's `metadata/1.root.json`); each of `targets` is downloaded into
    /// `downloads`. Returns a line per target: `<path> <contents, escaped as Python's unicode_escape> <custom as JSON>`, or `missing <path>`;
    /// throws with python-tuf's error when the refresh or a download fails.
    public static func ngclient(
        repository: String? = nil, base: String? = nil, client: String, downloads: String, targets: [String], trusting: String? = nil
    ) async throws -> [String] {
        guard let root = trusting ?? repository.map({ $0 + "/metadata/1.root.json" }) else { return [] }
        let output = try await run("""
            import functools, json, os, shutil, sys, threading
            from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
            from tuf.ngclient import Updater
            repository, base, root, client, downloads, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
            class Quiet(SimpleHTTPRequestHandler):
                def log_message(self, *args):
                    pass
            server = None
            if repository:
                server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=repository))
                threading.Thread(target=server.serve_forever, daemon=True).start()
                base = f"http://127.0.0.1:{server.server_address[1]}"
            os.makedirs(client, exist_ok=True)
            os.makedirs(downloads, exist_ok=True)
            if not os.path.exists(f"{client}/root.json"):
                shutil.copy(root, f"{client}/root.json")
            updater = Updater(client, f"{base}/metadata/", downloads, f"{base}/targets/", bootstrap=None)
            updater.refresh()
            for name in names:
                info = updater.get_targetinfo(name)
                if info is None:
                    print("missing", name)
                    continue
                path = updater.download_target(info)
                contents = open(path, "rb").read().decode("latin-1").encode("unicode_escape").decode()
                print(name, contents, json.dumps(info.custom, sort_keys=True))
            if server:
                server.shutdown()
            """, [repository ?? "", base ?? "", root, client, downloads] + targets)
        return output.split(separator: "\n").map(String.init)
    }
}
