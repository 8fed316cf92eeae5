import Foundation

extension BundleManifest {
    /// The manifest.json at the root of a bundle folder; an absent file is an empty manifest, but a
    /// folder (or anything else that is not a regular file) by that name is a malformed one.
    public static func read(bundleDirectory: String) throws(ManifestError) -> BundleManifest {
        try decode(FileReading.read(bundleDirectory + "/manifest.json"), source: "the bundle's manifest.json")
    }

    /// The manifest a read of a manifest.json gave: empty when the file is missing, malformed (naming
    /// `source`) when it could not be read or is not a valid manifest.
    package static func decode(_ read: FileReading.Outcome, source: String) throws(ManifestError) -> BundleManifest {
        if case .missing = read { return BundleManifest() }
        let bytes: [UInt8]
        do {
            bytes = try read.bytes()
        } catch {
            throw .malformed(source: source, reason: error.description)
        }
        return try decode(bytes, source: source)
    }

    /// The manifest in `bytes`; a malformed one is a ``ManifestError`` naming `source` and what is wrong.
    package static func decode(_ bytes: [UInt8], source: String) throws(ManifestError) -> BundleManifest {
        do {
            return try JSONDecoder().decode(BundleManifest.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw .malformed(source: source, reason: explain(error))
        } catch {
            throw .malformed(source: source, reason: "it is not JSON")
        }
    }

    package static func explain(_ error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let context) where context.codingPath.isEmpty: return "it is not JSON"
        case .keyNotFound(let key, _): return "'\(key.stringValue)' is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        @unknown default: return "it is not the expected JSON"
        }
    }
}
