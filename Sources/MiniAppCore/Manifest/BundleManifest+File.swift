import Foundation

extension BundleManifest {
    /// The manifest.json at the root of a bundle folder; an absent file is an empty manifest.
    public static func read(bundleDirectory: String) throws(ManifestError) -> BundleManifest {
        let path = bundleDirectory + "/manifest.json"
        guard let data = FileManager.default.contents(atPath: path) else { return BundleManifest() }
        do {
            return try JSONDecoder().decode(BundleManifest.self, from: data)
        } catch let error as DecodingError {
            throw .malformed(source: "the bundle's manifest.json", reason: Self.explain(error))
        } catch {
            throw .malformed(source: "the bundle's manifest.json", reason: "it is not JSON")
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
