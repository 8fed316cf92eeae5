import Foundation
import MiniAppCore

/// Public keys fetched from a platform, kept on disk for a while so that each install does not fetch them.
struct KeyStore: Sendable {
    /// The folder holding one `<key-id>.json` per key.
    let directory: String
    /// How long a stored key is used before it is fetched again.
    let lifetime: Duration

    private struct Entry: Codable {
        var record: PublicKeyRecord
        var fetchedAt: Date
    }

    /// The stored record for `id`, if it is younger than ``lifetime`` or `stale` allows any age (with no
    /// platform to fetch it from again, a key kept by an earlier install is the only one there is).
    func record(id: String, stale: Bool = false) -> PublicKeyRecord? {
        guard Identifier.isValid(id), linkFree, let bytes = FileReading.contents(path(id), followingLinks: false),
              let entry = try? RecordCoding.decoder().decode(Entry.self, from: Data(bytes)), entry.record.id == id else { return nil }
        if stale { return entry.record }
        let age = Date().timeIntervalSince(entry.fetchedAt)
        guard age > -300, age < Double(lifetime.components.seconds) else { return nil }
        return entry.record
    }

    /// Keeps `record` for later; a failure only costs a fetch next time.
    func store(_ record: PublicKeyRecord) {
        guard Identifier.isValid(record.id), let data = try? RecordCoding.encoder().encode(Entry(record: record, fetchedAt: Date())) else { return }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        guard linkFree else { return }
        try? Durability.writeAtomically(data, to: path(record.id), durable: false)
    }

    /// Whether `keys/` and this namespace's folder in it are real folders where they exist: keys are
    /// never read nor written through a link planted in the cache.
    private var linkFree: Bool {
        [(directory as NSString).deletingLastPathComponent, directory].allSatisfy { (try? BundleCache.requireRealDirectory($0)) != nil }
    }

    private func path(_ id: String) -> String { directory + "/" + id + ".json" }
}
