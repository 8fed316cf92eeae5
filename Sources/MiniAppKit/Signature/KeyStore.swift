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

    /// The stored record for `id`, if it is younger than ``lifetime``.
    func record(id: String) -> PublicKeyRecord? {
        guard Identifier.isValid(id), let data = FileManager.default.contents(atPath: path(id)),
              let entry = try? RecordCoding.decoder().decode(Entry.self, from: data), entry.record.id == id else { return nil }
        let age = Date().timeIntervalSince(entry.fetchedAt)
        guard age > -300, age < Double(lifetime.components.seconds) else { return nil }
        return entry.record
    }

    /// Keeps `record` for later; a failure only costs a fetch next time.
    func store(_ record: PublicKeyRecord) {
        guard Identifier.isValid(record.id), let data = try? RecordCoding.encoder().encode(Entry(record: record, fetchedAt: Date())) else { return }
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try? Durability.writeAtomically(data, to: path(record.id), durable: false)
    }

    /// Forgets the stored record for `id`.
    func drop(id: String) {
        guard Identifier.isValid(id) else { return }
        unlink(path(id))
    }

    private func path(_ id: String) -> String { directory + "/" + id + ".json" }
}
